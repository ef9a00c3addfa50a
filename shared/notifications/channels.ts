import { randomBytes } from 'node:crypto';
import { changedFields } from '../audit/changes.ts';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import { sealSecret } from '../auth/key-seal.ts';
import { assertOwnerEditable, type OwnedKind, writableOwner } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { ValidationFailed } from '../errors.ts';
import { logger } from '../logger.ts';
import { configurationProblem } from '../outbound/address.ts';
import type { ChannelConfig, CreateChannel, ListQuery, UpdateChannel } from './schemas.ts';
import { createChannel as createChannelSchema } from './schemas.ts';
import { attemptNotification } from './send.ts';
import * as store from './store.ts';

const channels: OwnedKind = { permission: 'integrations:manage', one: 'channel', many: 'channels' };

/** A URL the service will call, checked with what its name resolves to now: 400 naming body.config.url and why. */
async function assertOutboundUrl(url: string | undefined): Promise<void> {
  if (url === undefined) return;
  const problem = await configurationProblem(url);
  if (problem)
    throw ValidationFailed(`Refused URL: ${problem}`, [
      { path: 'body.config.url', message: `Refused URL: ${problem}`, code: 'custom' },
    ]);
}

/** A secret as stored: sealed under the seal key; in the clear (marked) only where no seal key is set. */
function storedSecret(secret: string): store.StoredSecret {
  const sealed = sealSecret(secret);
  if (sealed) return { secret: sealed, sealed: true };
  logger.warn('ENROLLMENT_KEY_SEAL_KEY is not set: a notification channel secret is stored in the clear');
  return { secret, sealed: false };
}

const generatedSecret = () => randomBytes(32).toString('base64url');

export async function createChannel(db: Db, principal: Principal, input: CreateChannel, audit: AuditContext) {
  const owner = await writableOwner(db, principal, input, channels);
  const config = input.config as ChannelConfig;
  await assertOutboundUrl(config.url);
  // A webhook signs every delivery: without a secret given, one is generated and shown once.
  const generated = input.type === 'webhook' && input.secret === undefined ? generatedSecret() : undefined;
  const secret = input.secret ?? generated;
  const created = await db.transaction(async (tx) => {
    const row = await store.insertChannel(
      tx,
      owner,
      { name: input.name, type: input.type, config, throttle: input.throttle },
      secret === undefined ? undefined : storedSecret(secret),
    );
    await auditOwnedChange(tx, audit, owner, {
      action: 'notification_channel.create',
      resourceType: 'notification_channel',
      resourceId: row.id,
      resourceName: row.name,
      details: { after: { type: row.type, config: row.config, throttle: row.throttle }, secretGenerated: !!generated },
    });
    return row;
  });
  return generated === undefined ? created : { ...created, secret: generated };
}

export function listChannels(db: Db, principal: Principal, query: ListQuery) {
  requirePermission(principal, 'alerts:read');
  return store.selectChannels(db, principal, query.orgId, query);
}

export async function getChannel(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'alerts:read');
  return assertReachable(await store.selectChannel(db, principal, id), 'Notification channel');
}

export async function updateChannel(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateChannel,
  audit: AuditContext,
) {
  const before = await getChannel(db, principal, id);
  assertOwnerEditable(principal, before, channels);
  const { secret, rotateSecret, config: rawConfig, ...fields } = change;
  let config: ChannelConfig | undefined;
  if (rawConfig !== undefined) {
    // The config is checked against the channel's type, as at creation.
    const parsed = createChannelSchema.safeParse({
      orgId: before.orgId ?? undefined,
      availability: before.orgId ? undefined : 'partner',
      name: before.name,
      type: before.type,
      config: rawConfig,
      secret: before.type === 'pagerduty' ? 'x'.repeat(16) : undefined,
    });
    const issues = parsed.error?.issues.filter((issue) => issue.path[0] === 'config') ?? [];
    if (issues.length > 0)
      throw ValidationFailed(
        issues[0]!.message,
        issues.map((issue) => ({ path: ['body', ...issue.path].join('.'), message: issue.message, code: 'custom' })),
      );
    config = parsed.data!.config as ChannelConfig;
    await assertOutboundUrl(config.url);
  }
  if ((secret || rotateSecret) && !['webhook', 'pagerduty'].includes(before.type))
    throw ValidationFailed(`A ${before.type} channel takes no secret`, [
      { path: 'body.secret', message: `A ${before.type} channel takes no secret`, code: 'custom' },
    ]);
  const generated = rotateSecret ? generatedSecret() : undefined;
  const newSecret = secret ?? generated;
  const updated = await db.transaction(async (tx) => {
    const row = await store.updateChannelRow(
      tx,
      id,
      { ...fields, config },
      newSecret === undefined ? undefined : storedSecret(newSecret),
    );
    await auditOwnedChange(tx, audit, before, {
      action: 'notification_channel.update',
      resourceType: 'notification_channel',
      resourceId: row.id,
      resourceName: row.name,
      details: {
        ...changedFields(before, row, ['name', 'config', 'throttle']),
        secretChanged: newSecret !== undefined,
      },
    });
    return row;
  });
  return generated === undefined ? updated : { ...updated, secret: generated };
}

/** Soft delete: its delivery log stays; its pending notifications fail as "channel deleted". */
export async function deleteChannel(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const channel = await getChannel(db, principal, id);
  assertOwnerEditable(principal, channel, channels);
  await db.transaction(async (tx) => {
    await store.softDeleteChannel(tx, id);
    await auditOwnedChange(tx, audit, channel, {
      action: 'notification_channel.delete',
      resourceType: 'notification_channel',
      resourceId: channel.id,
      resourceName: channel.name,
      details: { before: { type: channel.type, config: channel.config } },
    });
  });
}

/**
 * POST /notification-channels/{id}/test: a test notification, recorded in the channel's log and attempted at once
 * (no retry); the reply is its log entry, delivered or failed with the reason.
 */
export async function sendTest(db: Db, principal: Principal, id: string) {
  const channel = await getChannel(db, principal, id);
  requirePermission(principal, 'integrations:manage');
  const row = await store.insertNotification(db, {
    channelId: channel.id,
    alertId: null,
    orgId: channel.orgId,
    event: 'channel.test',
    step: null,
    dedupeKey: null,
    status: 'pending',
    body: { channelName: channel.name },
  });
  await attemptNotification(db, row!.id);
  return (await store.selectNotification(db, row!.id))!;
}
