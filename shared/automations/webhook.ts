/**
 * The inbound webhook of an automation: a per-automation URL whose calls are signed as Logbook signs its PSA
 * deliveries (`X-Logbook-Signature: sha256=<hex HMAC-SHA256 of "<X-Logbook-Timestamp>.<body>">`, the timestamp in
 * Unix seconds). A bad signature, a timestamp more than 5 minutes away, or the replay of a call seen within 5 minutes
 * is 401, and runs nothing. The secret is sealed at rest and shown once, when it is rotated.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { signature } from '../alerts/psa-delivery.ts';
import type { AuditContext } from '../audit/writer.ts';
import { openSecret, sealSecret } from '../auth/key-seal.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { InvalidState, Unauthenticated, ValidationFailed } from '../errors.ts';
import { writableAutomation } from './automations.ts';
import { fire } from './fire.ts';
import { runViews, startedReply } from './runs.ts';
import { devicesInScope } from './scope.ts';
import * as store from './store.ts';
import { auditAutomation, webhookPath } from './stored.ts';

/** How far a call's timestamp may be from the server's clock, and how long its signature is remembered. */
export const replayWindowMinutes = 5;

/** POST /automations/{id}/webhook-secret: a new secret (the old one stops working), shown once. */
export async function rotateWebhookSecret(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const automation = await writableAutomation(db, principal, id);
  if (!automation.triggers.some((t) => t.type === 'webhook'))
    throw InvalidState('The automation has no webhook trigger');
  const secret = `whsec_${randomBytes(32).toString('base64url')}`;
  const sealed = sealSecret(secret);
  if (!sealed) throw new Error('Secrets cannot be sealed: no seal key is set');
  await db.transaction(async (tx) => {
    await store.setWebhookSecret(tx, id, sealed);
    await auditAutomation(tx, audit, automation, 'automation.update', { webhookSecret: 'rotated' });
  });
  return {
    automationId: id,
    url: webhookPath(id),
    secret,
    signing:
      'X-Logbook-Timestamp: Unix seconds; X-Logbook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">',
  };
}

const refused = () => Unauthenticated('Invalid webhook signature');

/** POST /hooks/automations/{id}: a signed call runs the automation on the devices it names, or on every one in scope. */
export async function receiveWebhook(
  db: Db,
  id: string,
  headers: Record<string, string | undefined>,
  rawBody: string,
  audit: AuditContext,
  now = Date.now(),
) {
  const automation = await store.selectLiveAutomation(db, id);
  const sealed = automation && (await store.selectWebhookSecret(db, id));
  const secret = sealed ? openSecret(sealed) : undefined;
  if (!automation || !secret || !automation.triggers.some((t) => t.type === 'webhook')) throw refused();
  const timestamp = headers['x-logbook-timestamp'] ?? '';
  const given = headers['x-logbook-signature'] ?? '';
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(now - Number(timestamp) * 1000) > replayWindowMinutes * 60_000)
    throw refused();
  const expected = Buffer.from(signature(secret, timestamp, rawBody));
  const actual = Buffer.from(given);
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) throw refused();
  if (!(await store.recordWebhookCall(db, id, given.slice(7, 71), replayWindowMinutes))) throw refused();
  let body: { deviceIds?: unknown };
  try {
    body = rawBody.trim() === '' ? {} : (JSON.parse(rawBody) as { deviceIds?: unknown });
  } catch {
    throw ValidationFailed('The body is not JSON', [{ path: 'body', message: 'Not JSON', code: 'custom' }]);
  }
  const deviceIds = body?.deviceIds;
  if (
    deviceIds !== undefined &&
    !(
      Array.isArray(deviceIds) &&
      deviceIds.length <= 1000 &&
      deviceIds.every((d) => typeof d === 'string' && /^[0-9a-f-]{36}$/i.test(d))
    )
  )
    throw ValidationFailed('deviceIds is a list of device ids', [
      { path: 'body.deviceIds', message: 'A list of at most 1,000 device ids', code: 'custom' },
    ]);
  if (!automation.enabled) throw InvalidState('The automation is disabled');
  const devices = await devicesInScope(
    db,
    automation,
    deviceIds ? { deviceIds: (deviceIds as string[]).map((d) => d.toLowerCase()) } : {},
  );
  const occurrenceKey = `webhook:${timestamp}:${given.slice(7, 71)}`;
  const fired = await fire(db, {
    automation,
    trigger: { type: 'webhook', occurrenceKey },
    guarded: true,
    devices,
    audit,
    startedBy: automation.createdBy,
  });
  return startedReply(id, occurrenceKey, fired.duplicate, await runViews(db, fired.runIds, true));
}
