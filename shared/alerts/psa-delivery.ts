import { createHmac, randomUUID } from 'node:crypto';
import { openSecret, sealSecret } from '../auth/key-seal.ts';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { OutboundRefused } from '../outbound/address.ts';
import { postOutbound } from '../outbound/request.ts';
import { enqueue } from '../queue/work-queue.ts';
import type { DeliveryEvent } from './schemas.ts';
import * as store from './store.ts';

/**
 * Waits before each retry of a failed PSA delivery: exponential from one minute, doubling, 11 retries spanning
 * 34 hours; after the 12th failed attempt the delivery is `failed`.
 */
export const retryDelaysSeconds = Array.from({ length: 11 }, (_, n) => 60 * 2 ** n);

/** One attempt waits this long for the PSA's answer (PSA_DELIVERY_TIMEOUT_MS). */
const timeoutMs = () => Number(process.env.PSA_DELIVERY_TIMEOUT_MS) || 10_000;
/** At most this much of the PSA's answer is read (its ticket id is near the top). */
const maxAnswerBytes = 64 * 1024;

/**
 * The signature header of a delivery: `sha256=` and the lowercase hex HMAC-SHA256, keyed with the integration's
 * secret, of `<X-Logbook-Timestamp>.<body>` (docs/alerts.md).
 */
export function signature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** Records an alert event for the PSA and queues its first attempt; never fails the request that raised it. */
export async function queueAlertEvent(
  db: Db,
  alert: store.AlertRow,
  event: DeliveryEvent,
  integrationId: string,
): Promise<void> {
  const id = randomUUID();
  const body = JSON.stringify({
    id,
    event,
    occurredAt: new Date().toISOString(),
    alert: {
      id: alert.id,
      orgId: alert.orgId,
      deviceId: alert.deviceId,
      source: alert.source,
      severity: alert.severity,
      title: alert.title,
      details: alert.details,
      status: alert.status,
      occurrences: alert.occurrences,
      createdAt: alert.createdAt,
      acknowledgedAt: alert.acknowledgedAt,
      resolvedAt: alert.resolvedAt,
      psaTicketId: alert.binding.psaTicketId,
    },
  });
  try {
    await store.insertDelivery(db, { id, alertId: alert.id, integrationId, event, body });
    await enqueue({ kind: 'psa.deliver', deliveryId: id });
  } catch (error) {
    logger.error('Could not record a PSA delivery', { alertId: alert.id, event, error: String(error) });
  }
}

export type AttemptResult = 'delivered' | 'retrying' | 'failed' | 'not-due';

/**
 * One attempt of a delivery that is due at `now` (the work queue's job; tests call it with the due time instead of
 * waiting): POST the stored body, signed, to the integration's URL. A 2xx answer delivers it, and a ticket id in
 * its JSON (`ticketId`, `ticket_id`, `id` or `ticket.id`) is kept on the alert; anything else, a timeout or a
 * network error is retried after the next delay of retryDelaysSeconds.
 */
export async function attemptDelivery(db: Db, deliveryId: string, now = new Date()): Promise<AttemptResult> {
  const delivery = await store.claimDelivery(db, deliveryId, now, Math.ceil(timeoutMs() / 1000) + 30);
  if (!delivery) return 'not-due';
  const started = performance.now();
  const timestamp = String(Math.floor(Date.now() / 1000));
  let statusCode: number | null = null;
  let error: string | null = null;
  let ticketId: string | undefined;
  let refused: string | undefined;
  try {
    const secret = await signingSecret(db, delivery);
    const reply = await postOutbound(delivery.url, {
      timeoutMs: timeoutMs(),
      maxAnswerBytes,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Logbook-PSA-Delivery/1',
        'x-logbook-event': delivery.event,
        'x-logbook-delivery': delivery.id,
        'x-logbook-timestamp': timestamp,
        'x-logbook-signature': signature(secret, timestamp, delivery.body),
      },
      body: delivery.body,
    });
    statusCode = reply.status;
    if (reply.status >= 200 && reply.status < 300) ticketId = ticketIdOf(reply.text);
    else error = `HTTP ${reply.status}`;
  } catch (failure) {
    const name = (failure as { name?: string }).name;
    if (failure instanceof OutboundRefused) refused = error = failure.message;
    else error = name === 'TimeoutError' ? `No answer within ${timeoutMs()} ms` : `Request failed: ${String(failure)}`;
  }
  // A refused destination was never called: its log says why, with no timing that could tell what is inside.
  const durationMs = refused ? null : Math.round(performance.now() - started);
  const at = now;
  if (error === null) {
    await store.recordAttempt(db, deliveryId, {
      at,
      statusCode,
      error,
      durationMs,
      outcome: 'delivered',
      nextAttemptAt: null,
    });
    if (ticketId) await store.setPsaTicketId(db, delivery.alertId, ticketId);
    return 'delivered';
  }
  const delay = retryDelaysSeconds[delivery.attempts];
  if (delay === undefined) {
    await store.recordAttempt(db, deliveryId, {
      at,
      statusCode,
      error,
      durationMs,
      outcome: 'failed',
      nextAttemptAt: null,
    });
    logger.warn('A PSA delivery failed for good', { deliveryId, attempts: delivery.attempts + 1, error });
    return 'failed';
  }
  const nextAttemptAt = new Date(now.getTime() + delay * 1000);
  await store.recordAttempt(db, deliveryId, { at, statusCode, error, durationMs, outcome: 'pending', nextAttemptAt });
  await enqueue({ kind: 'psa.deliver', deliveryId }, delay);
  return 'retrying';
}

/**
 * The integration's secret in the clear, to sign with. One stored in the clear (written before secrets were sealed,
 * or without a seal key) is sealed now, on its first read.
 */
async function signingSecret(
  db: Db,
  delivery: { integrationId: string; secret: string; secretSealed: boolean },
): Promise<string> {
  if (!delivery.secretSealed) {
    const sealed = sealSecret(delivery.secret);
    if (sealed) await store.updateIntegrationSecretSealed(db, delivery.integrationId, delivery.secret, sealed);
    return delivery.secret;
  }
  const secret = openSecret(delivery.secret);
  if (secret === undefined) throw new Error('its secret cannot be opened (ENROLLMENT_KEY_SEAL_KEY unset or changed)');
  return secret;
}

function ticketIdOf(text: string): string | undefined {
  try {
    const answer = JSON.parse(text) as Record<string, unknown>;
    const ticket = answer.ticket as Record<string, unknown> | undefined;
    const id = answer.ticketId ?? answer.ticket_id ?? answer.id ?? ticket?.id;
    return typeof id === 'string' || typeof id === 'number' ? String(id).slice(0, 255) : undefined;
  } catch {
    return undefined;
  }
}
