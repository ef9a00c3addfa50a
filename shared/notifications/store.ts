import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one, prepared, type Tx } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { ChannelConfig, ChannelType, NoticeEvent, Severity, Step } from './schemas.ts';

/** An owner: an organization, or its partner (orgId null) for everything of the partner. */
export interface Owner {
  partnerId: string;
  orgId: string | null;
}

/**
 * Rows of an owner the principal reaches: a partner's for its users, an organization's and its partner's for the
 * organization's users; the organization must be live.
 */
const reachableOwned = (alias: string) => `${alias}.deleted_at IS NULL
  AND (:tenantScope::text = 'platform'
       OR (:tenantScope::text = 'partner' AND ${alias}.partner_id = :tenantPartnerId::uuid)
       OR (:tenantScope::text = 'organization' AND ${alias}.partner_id = :tenantPartnerId::uuid
           AND (${alias}.org_id IS NULL OR ${alias}.org_id = :tenantOrgId::uuid)))
  AND (${alias}.org_id IS NULL OR EXISTS (SELECT 1 FROM organizations o WHERE o.id = ${alias}.org_id AND o.deleted_at IS NULL))`;

// Channels

const channelColumns = `c.id, c.partner_id AS "partnerId", c.org_id AS "orgId",
  CASE WHEN c.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability, c.name, c.type, c.config,
  c.secret IS NOT NULL AS "hasSecret",
  CASE WHEN c.throttle_max IS NULL THEN NULL
       ELSE jsonb_build_object('max', c.throttle_max, 'windowMinutes', c.throttle_window_minutes) END AS throttle,
  c.created_at AS "createdAt", c.updated_at AS "updatedAt"`;

export type ChannelRow = {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  type: ChannelType;
  config: ChannelConfig;
  hasSecret: boolean;
  throttle: { max: number; windowMinutes: number } | null;
  createdAt: Date;
  updatedAt: Date;
};

/** A secret as stored: sealed, or in the clear (marked) when no seal key is set. */
export interface StoredSecret {
  secret: string;
  sealed: boolean;
}

export async function insertChannel(
  db: Db,
  owner: Owner,
  input: { name: string; type: ChannelType; config: ChannelConfig; throttle?: { max: number; windowMinutes: number } },
  secret: StoredSecret | undefined,
) {
  const row = await one<ChannelRow>(
    db,
    `INSERT INTO notification_channels AS c (partner_id, org_id, name, type, config, secret, secret_sealed, throttle_max,
                                            throttle_window_minutes)
     VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :type::text, :config::jsonb, :secret::text,
             coalesce(:sealed::boolean, false), :max::int, :windowMinutes::int)
     RETURNING ${channelColumns}`,
    {
      ...owner,
      name: input.name,
      type: input.type,
      config: input.config,
      secret: secret?.secret ?? null,
      sealed: secret?.sealed ?? null,
      max: input.throttle?.max ?? null,
      windowMinutes: input.throttle?.windowMinutes ?? null,
    },
  );
  return row!;
}

export function selectChannel(db: Db, principal: Principal, id: string) {
  return one<ChannelRow>(
    db,
    `SELECT ${channelColumns} FROM notification_channels c WHERE c.id = :id::uuid AND ${reachableOwned('c')}`,
    { id, ...tenantParams(principal) },
  );
}

export function selectChannels(db: Db, principal: Principal, orgId: string | undefined, page: Page) {
  return selectPage<ChannelRow>(
    db,
    channelColumns,
    `notification_channels c WHERE ${reachableOwned('c')}
       AND (:orgId::uuid IS NULL OR c.org_id IS NULL OR c.org_id = :orgId::uuid)`,
    'c.name, c.id',
    { ...tenantParams(principal), orgId: orgId ?? null },
    page,
  );
}

export async function updateChannelRow(
  db: Db,
  id: string,
  change: { name?: string; config?: ChannelConfig; throttle?: { max: number; windowMinutes: number } | null },
  secret: StoredSecret | undefined,
) {
  const row = await one<ChannelRow>(
    db,
    `UPDATE notification_channels c SET name = coalesce(:name::text, name), config = coalesce(:config::jsonb, config),
            secret = coalesce(:secret::text, secret), secret_sealed = coalesce(:sealed::boolean, secret_sealed),
            throttle_max = CASE WHEN :throttleSet::boolean THEN :max::int ELSE throttle_max END,
            throttle_window_minutes = CASE WHEN :throttleSet::boolean THEN :windowMinutes::int ELSE throttle_window_minutes END,
            updated_at = now()
      WHERE c.id = :id::uuid AND c.deleted_at IS NULL
      RETURNING ${channelColumns}`,
    {
      id,
      name: change.name,
      config: change.config,
      secret: secret?.secret,
      sealed: secret?.sealed,
      throttleSet: change.throttle !== undefined,
      max: change.throttle?.max ?? null,
      windowMinutes: change.throttle?.windowMinutes ?? null,
    },
  );
  return row!;
}

export async function softDeleteChannel(db: Db, id: string): Promise<void> {
  await db.query('UPDATE notification_channels SET deleted_at = now() WHERE id = :id::uuid', { id });
}

/** The live channels among `ids` that serve an organization: its own and its partner's. */
export async function selectServingChannels(db: Db, orgId: string, ids: string[]) {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id FROM notification_channels c JOIN organizations o ON o.id = :orgId::uuid
      WHERE c.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:ids::jsonb))
        AND c.deleted_at IS NULL AND c.partner_id = o.partner_id AND (c.org_id IS NULL OR c.org_id = o.id)`,
    { orgId, ids },
  );
  return rows.map((row) => row.id);
}

/** Channel ids of `ids` an owner may name (its own, its partner's when it is an organization) that are missing. */
export async function selectUnknownChannelIds(db: Db, owner: Owner, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT x.value AS id FROM jsonb_array_elements_text(:ids::jsonb) x
      WHERE NOT EXISTS (SELECT 1 FROM notification_channels c
                         WHERE c.id::text = x.value AND c.deleted_at IS NULL AND c.partner_id = :partnerId::uuid
                           AND (c.org_id IS NULL OR c.org_id = :orgId::uuid))`,
    { ids, ...owner },
  );
  return rows.map((row) => row.id);
}

/** What sending needs of a channel: its type, config, secret and throttle (deleted channels too, to stop them). */
export type SendingChannel = {
  id: string;
  partnerId: string;
  orgId: string | null;
  name: string;
  type: ChannelType;
  config: ChannelConfig;
  secret: string | null;
  secretSealed: boolean;
  throttleMax: number | null;
  throttleWindowMinutes: number | null;
  deleted: boolean;
};

export function selectSendingChannel(db: Db, id: string, lock = false) {
  return one<SendingChannel>(
    db,
    `SELECT id, partner_id AS "partnerId", org_id AS "orgId", name, type, config, secret, secret_sealed AS "secretSealed",
            throttle_max AS "throttleMax", throttle_window_minutes AS "throttleWindowMinutes",
            deleted_at IS NOT NULL AS deleted
       FROM notification_channels WHERE id = :id::uuid${lock ? ' FOR UPDATE' : ''}`,
    { id },
  );
}

export async function updateChannelSecretSealed(db: Db, id: string, plain: string, sealed: string): Promise<void> {
  await db.query(
    `UPDATE notification_channels SET secret = :sealed::text, secret_sealed = true
      WHERE id = :id::uuid AND NOT secret_sealed AND secret = :plain::text`,
    { id, plain, sealed },
  );
}

// Escalation policies

const policyColumns = `p.id, p.partner_id AS "partnerId", p.org_id AS "orgId",
  CASE WHEN p.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability, p.name, p.steps,
  p.created_at AS "createdAt", p.updated_at AS "updatedAt"`;

export type PolicyRow = {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  steps: Step[];
  createdAt: Date;
  updatedAt: Date;
};

export async function insertPolicy(db: Db, owner: Owner, input: { name: string; steps: Step[] }) {
  const row = await one<PolicyRow>(
    db,
    `INSERT INTO escalation_policies AS p (partner_id, org_id, name, steps)
     VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :steps::jsonb) RETURNING ${policyColumns}`,
    { ...owner, name: input.name, steps: input.steps },
  );
  return row!;
}

export function selectPolicy(db: Db, principal: Principal, id: string) {
  return one<PolicyRow>(
    db,
    `SELECT ${policyColumns} FROM escalation_policies p WHERE p.id = :id::uuid AND ${reachableOwned('p')}`,
    { id, ...tenantParams(principal) },
  );
}

export function selectPolicies(db: Db, principal: Principal, orgId: string | undefined, page: Page) {
  return selectPage<PolicyRow>(
    db,
    policyColumns,
    `escalation_policies p WHERE ${reachableOwned('p')}
       AND (:orgId::uuid IS NULL OR p.org_id IS NULL OR p.org_id = :orgId::uuid)`,
    'p.name, p.id',
    { ...tenantParams(principal), orgId: orgId ?? null },
    page,
  );
}

export async function updatePolicyRow(db: Db, id: string, change: { name?: string; steps?: Step[] }) {
  const row = await one<PolicyRow>(
    db,
    `UPDATE escalation_policies p SET name = coalesce(:name::text, name), steps = coalesce(:steps::jsonb, steps),
            updated_at = now()
      WHERE p.id = :id::uuid AND p.deleted_at IS NULL RETURNING ${policyColumns}`,
    { id, name: change.name, steps: change.steps },
  );
  return row!;
}

/** Soft delete; defaults naming it stop naming it. */
export async function softDeletePolicy(tx: Tx, id: string): Promise<void> {
  await tx.query('UPDATE escalation_policies SET deleted_at = now() WHERE id = :id::uuid', { id });
  await tx.query(
    'UPDATE notification_defaults SET escalation_policy_id = NULL, updated_at = now() WHERE escalation_policy_id = :id::uuid',
    { id },
  );
}

/** A live policy's steps, for the escalation job. */
export function selectPolicySteps(db: Db, id: string) {
  return one<{ steps: Step[] }>(
    db,
    'SELECT steps FROM escalation_policies WHERE id = :id::uuid AND deleted_at IS NULL',
    {
      id,
    },
  );
}

/** Whether a live policy serves the owner (its own, or its partner's for an organization). */
export async function policyServes(db: Db, owner: Owner, id: string): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 FROM escalation_policies WHERE id = :id::uuid AND deleted_at IS NULL AND partner_id = :partnerId::uuid
        AND (org_id IS NULL OR org_id = :orgId::uuid)`,
    { id, ...owner },
  );
  return row !== undefined;
}

// Defaults

export type DefaultsRow = { channels: Partial<Record<Severity, string[]>>; escalationPolicyId: string | null };

export function selectDefaults(db: Db, owner: Owner) {
  return one<DefaultsRow>(
    db,
    `SELECT channels, escalation_policy_id AS "escalationPolicyId" FROM notification_defaults
      WHERE partner_id = :partnerId::uuid AND org_id IS NOT DISTINCT FROM :orgId::uuid`,
    { ...owner },
  );
}

export async function upsertDefaults(db: Db, owner: Owner, defaults: DefaultsRow): Promise<void> {
  await db.query(
    `INSERT INTO notification_defaults (partner_id, org_id, channels, escalation_policy_id)
     VALUES (:partnerId::uuid, :orgId::uuid, :channels::jsonb, :escalationPolicyId::uuid)
     ON CONFLICT (partner_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'))
     DO UPDATE SET channels = EXCLUDED.channels, escalation_policy_id = EXCLUDED.escalation_policy_id, updated_at = now()`,
    { ...owner, channels: defaults.channels, escalationPolicyId: defaults.escalationPolicyId },
  );
}

// Alerts as notifications see them

/** An alert as it is told: read here so this domain needs nothing of the alerts domain's code. */
export type NoticeAlert = {
  id: string;
  orgId: string;
  partnerId: string;
  orgName: string;
  deviceId: string | null;
  hostname: string | null;
  source: Record<string, unknown>;
  severity: Severity;
  title: string;
  details: Record<string, unknown>;
  status: 'open' | 'acknowledged' | 'resolved';
  suppressedBy: { maintenanceWindowId: string } | null;
  createdAt: Date;
  /** The notification defaults of its organization and of its partner, read with it. */
  ownDefaults: DefaultsRow | null;
  partnerDefaults: DefaultsRow | null;
  /** The live channels serving its organization among those the defaults name for its severity. */
  servingDefaultChannels: string[];
};

const defaultsOf = (org: string) => `LEFT JOIN LATERAL (
     SELECT jsonb_build_object('channels', x.channels, 'escalationPolicyId', x.escalation_policy_id) AS v
       FROM notification_defaults x WHERE x.partner_id = a.partner_id AND x.org_id ${org}) AS`;

/**
 * An alert as it is told, with the defaults that route it and the channels they name for its severity that serve its
 * organization (its own, its partner's; as selectServingChannels answers): one statement.
 */
export function selectNoticeAlert(db: Db, id: string) {
  return one<NoticeAlert>(db, noticeAlertSql, { id });
}

/** Every alert's notification job reads it: prepared once per connection. */
const noticeAlertSql = prepared(
  'logbook_notifications_notice_alert',
  `SELECT a.id, a.org_id AS "orgId", a.partner_id AS "partnerId", o.name AS "orgName", a.device_id AS "deviceId",
            d.hostname, jsonb_build_object('type', a.source_type, 'id', a.source_id) AS source, a.severity, a.title,
            a.details, a.status, a.suppressed_by AS "suppressedBy", a.created_at AS "createdAt",
            own.v AS "ownDefaults", partner.v AS "partnerDefaults",
            (SELECT coalesce(jsonb_agg(c.id), '[]') FROM notification_channels c
              WHERE c.id IN (SELECT value::uuid FROM jsonb_array_elements_text(
                               coalesce(nullif(own.v -> 'channels' -> a.severity, 'null'),
                                        nullif(partner.v -> 'channels' -> a.severity, 'null'), '[]')))
                AND c.deleted_at IS NULL AND c.partner_id = o.partner_id AND (c.org_id IS NULL OR c.org_id = o.id)
            ) AS "servingDefaultChannels"
       FROM alerts a JOIN organizations o ON o.id = a.org_id LEFT JOIN devices d ON d.id = a.device_id
       ${defaultsOf('= a.org_id')} own ON true
       ${defaultsOf('IS NULL')} partner ON true
      WHERE a.id = :id::uuid`,
);

/** Whether the principal reaches the alert (its organization live and within the principal's tenancy). */
export async function alertReachable(db: Db, principal: Principal, alertId: string): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 FROM alerts a JOIN organizations o ON o.id = a.org_id
      WHERE a.id = :alertId::uuid AND o.deleted_at IS NULL AND ${orgTenantSql('o')}`,
    { alertId, ...tenantParams(principal) },
  );
  return row !== undefined;
}

/** Marks a new alert held back by a maintenance window; the rule's routing is kept for the window's end. */
export async function markSuppressed(
  tx: Tx,
  alertId: string,
  windowId: string,
  routing: { channels?: string[]; escalationPolicyId?: string | null } | undefined,
): Promise<void> {
  await tx.query(
    `UPDATE alerts SET suppressed_by = jsonb_strip_nulls(jsonb_build_object('maintenanceWindowId', :windowId::uuid,
                                                                             'routing', :routing::jsonb))
      WHERE id = :alertId::uuid`,
    { alertId, windowId, routing: routing ? { ...routing } : null },
  );
}

/** The alerts a window held back that still fire (open or acknowledged), with the routing their rule named. */
export async function selectHeldAlerts(db: Db, windowId: string) {
  const { rows } = await db.query<{
    id: string;
    routing: { channels?: string[]; escalationPolicyId?: string | null } | null;
  }>(
    `SELECT id, suppressed_by -> 'routing' AS routing FROM alerts
      WHERE suppressed_by ->> 'maintenanceWindowId' = :windowId::text AND status <> 'resolved'`,
    { windowId },
  );
  return rows;
}

// The delivery log

export type NotificationInsert = {
  channelId: string;
  alertId: string | null;
  orgId: string | null;
  event: NoticeEvent;
  step: number | null;
  dedupeKey: string | null;
  status: 'pending' | 'throttled';
  body: Record<string, unknown>;
};

/**
 * Records a notification; undefined when its dedupe key was recorded before (it is told once). Its first attempt is
 * due now, in milliseconds as the attempt's clock counts them.
 */
export async function insertNotification(db: Db, notice: NotificationInsert) {
  return one<{ id: string }>(
    db,
    `INSERT INTO notifications (channel_id, alert_id, org_id, event, step, dedupe_key, status, body, next_attempt_at)
     VALUES (:channelId::uuid, :alertId::uuid, :orgId::uuid, :event::text, :step::int, :dedupeKey::text,
             :status::text, :body::jsonb,
             CASE WHEN :status::text = 'pending' THEN date_trunc('milliseconds', now()) END)
     ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING id`,
    notice,
  );
}

/**
 * Records notifications of alerts or automations on one channel, whose row the caller holds locked, in one statement
 * with its throttle's count, in the order given: each is `throttled` (not due) when the channel's notifications within
 * the throttle's window (digests and tests are not counted), those recorded before it here included, reached the
 * limit, else `pending`, its first attempt due now. One whose dedupe key was recorded before is not recorded (it is
 * told once). Answers those recorded, with when the oldest counted notification was made (the window reopens then).
 */
export async function insertCountedNotifications(
  tx: Tx,
  channelId: string,
  notices: (Omit<NotificationInsert, 'status' | 'channelId'> & { id: string })[],
  throttle: { max: number; windowMinutes: number } | null,
) {
  const { rows } = await tx.query<{ id: string; status: 'pending' | 'throttled'; oldest: Date }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(:notices::jsonb)
         AS x(i int, id uuid, "alertId" uuid, "orgId" uuid, event text, step int, "dedupeKey" text, body jsonb)),
     fresh AS (
       SELECT input.*, count(*) FILTER (WHERE input.event <> 'channel.test') OVER (ORDER BY input.i) AS n FROM input
        WHERE input."dedupeKey" IS NULL
           OR NOT EXISTS (SELECT 1 FROM notifications x WHERE x.dedupe_key = input."dedupeKey")),
     r AS (
       SELECT count(*)::int AS count, min(created_at) AS oldest FROM notifications
        WHERE :max::int IS NOT NULL AND channel_id = :channelId::uuid
          AND created_at > now() - :windowMinutes::int * interval '1 minute'
          AND status IN ('pending', 'delivered', 'failed') AND event NOT IN ('alert.digest', 'channel.test')),
     s AS (
       SELECT fresh.*, CASE WHEN fresh.event <> 'channel.test' AND r.count + fresh.n > :max::int THEN 'throttled'
                            ELSE 'pending' END AS status
         FROM fresh, r)
     INSERT INTO notifications (id, channel_id, alert_id, org_id, event, step, dedupe_key, status, body, next_attempt_at)
     SELECT s.id, :channelId::uuid, s."alertId", s."orgId", s.event, s.step, s."dedupeKey", s.status, s.body,
            CASE WHEN s.status = 'pending' THEN date_trunc('milliseconds', now()) END
       FROM s ORDER BY s.i
     ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING id, status, coalesce((SELECT oldest FROM r), now()) AS oldest`,
    {
      channelId,
      notices: notices.map((notice, i) => ({ ...notice, i })),
      max: throttle?.max ?? null,
      windowMinutes: throttle?.windowMinutes ?? null,
    },
  );
  return rows;
}

/** Arms the channel's digest for `due` unless one is armed already; true when this call armed it. */
export async function armDigest(db: Db, channelId: string, due: Date): Promise<boolean> {
  const row = await one(
    db,
    `UPDATE notification_channels SET digest_due_at = :due::timestamptz
      WHERE id = :channelId::uuid AND digest_due_at IS NULL RETURNING 1`,
    { channelId, due },
  );
  return row !== undefined;
}

/** Takes the channel's throttled notifications into a digest (at most `limit`), and disarms its digest. */
export async function takeThrottled(tx: Tx, channelId: string, digestId: string, limit: number) {
  await tx.query('UPDATE notification_channels SET digest_due_at = NULL WHERE id = :channelId::uuid', { channelId });
  const { rows } = await tx.query<{
    id: string;
    alertId: string | null;
    event: NoticeEvent;
    body: Record<string, unknown>;
  }>(
    `UPDATE notifications n SET status = 'digested', digest_id = :digestId::uuid
      WHERE n.id IN (SELECT id FROM notifications WHERE channel_id = :channelId::uuid AND status = 'throttled'
                      ORDER BY created_at, id LIMIT :limit::int)
      RETURNING n.id, n.alert_id AS "alertId", n.event, n.body`,
    { channelId, digestId, limit },
  );
  return rows;
}

export async function insertDigest(
  tx: Tx,
  digest: { id: string; channelId: string; orgId: string | null; body: Record<string, unknown> },
): Promise<void> {
  await tx.query(
    `INSERT INTO notifications (id, channel_id, org_id, event, status, body, next_attempt_at)
     VALUES (:id::uuid, :channelId::uuid, :orgId::uuid, 'alert.digest', 'pending', :body::jsonb,
             date_trunc('milliseconds', now()))`,
    digest,
  );
}

const sendingChannelJson = `jsonb_build_object('id', c.id, 'partnerId', c.partner_id, 'orgId', c.org_id, 'name', c.name,
  'type', c.type, 'config', c.config, 'secret', c.secret, 'secretSealed', c.secret_sealed, 'throttleMax', c.throttle_max,
  'throttleWindowMinutes', c.throttle_window_minutes, 'deleted', c.deleted_at IS NOT NULL)`;

/**
 * Takes a due pending notification for one attempt: its next attempt moves `leaseSeconds` ahead, so a second worker
 * holding the same job finds it not due. Its channel is read with it (deleted ones too, to stop them).
 */
export function claimNotification(db: Db, id: string, now: Date, leaseSeconds: number) {
  return one<{
    id: string;
    channelId: string;
    alertId: string | null;
    orgId: string | null;
    event: NoticeEvent;
    body: Record<string, unknown>;
    attempts: number;
    createdAt: Date;
    channel: SendingChannel | null;
  }>(
    db,
    `UPDATE notifications n SET next_attempt_at = :now::timestamptz + :leaseSeconds::int * interval '1 second'
      WHERE n.id = :id::uuid AND n.status = 'pending' AND n.next_attempt_at <= :now::timestamptz
      RETURNING n.id, n.channel_id AS "channelId", n.alert_id AS "alertId", n.org_id AS "orgId", n.event, n.body,
                n.attempts, n.created_at AS "createdAt",
                (SELECT ${sendingChannelJson} FROM notification_channels c WHERE c.id = n.channel_id) AS channel`,
    { id, now, leaseSeconds },
  );
}

export async function recordNotificationAttempt(
  db: Db,
  id: string,
  attempt: {
    at: Date;
    statusCode: number | null;
    error: string | null;
    durationMs: number | null;
    outcome: 'delivered' | 'failed' | 'pending';
    nextAttemptAt: Date | null;
  },
): Promise<void> {
  await db.query(
    `UPDATE notifications SET attempts = attempts + 1, status = :outcome::text, next_attempt_at = :nextAttemptAt::timestamptz,
            last_error = :error::text,
            delivered_at = CASE WHEN :outcome::text = 'delivered' THEN :at::timestamptz END,
            log = log || jsonb_build_array(jsonb_build_object('at', :at::timestamptz, 'statusCode', :statusCode::int,
                                                               'error', :error::text, 'durationMs', :durationMs::int))
      WHERE id = :id::uuid`,
    { id, ...attempt },
  );
}

const notificationColumns = `n.id, n.channel_id AS "channelId", c.type AS "channelType", n.alert_id AS "alertId",
  n.event, n.step, n.status, n.attempts, n.next_attempt_at AS "nextAttemptAt", n.last_error AS "lastError", n.log,
  n.digest_id AS "digestId", n.created_at AS "createdAt", n.delivered_at AS "deliveredAt"`;

export type NotificationRow = {
  id: string;
  channelId: string;
  channelType: ChannelType;
  alertId: string | null;
  event: NoticeEvent;
  step: number | null;
  status: 'pending' | 'delivered' | 'failed' | 'throttled' | 'digested';
  attempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  log: { at: string; statusCode: number | null; error: string | null; durationMs: number | null }[];
  digestId: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
};

export function selectNotification(db: Db, id: string) {
  return one<NotificationRow>(
    db,
    `SELECT ${notificationColumns} FROM notifications n JOIN notification_channels c ON c.id = n.channel_id
      WHERE n.id = :id::uuid`,
    { id },
  );
}

/** An alert's notifications, and the digests that carried its throttled ones. */
export function selectAlertNotifications(db: Db, alertId: string, page: Page) {
  return selectPage<NotificationRow>(
    db,
    notificationColumns,
    `notifications n JOIN notification_channels c ON c.id = n.channel_id
      WHERE n.alert_id = :alertId::uuid
         OR n.id IN (SELECT digest_id FROM notifications WHERE alert_id = :alertId::uuid AND digest_id IS NOT NULL)`,
    'n.created_at, n.id',
    { alertId },
    page,
  );
}

/** The channels an alert was told of (its first notice or an escalation): the ones to hear it acknowledged or resolved. */
export async function selectToldChannels(db: Db, alertId: string): Promise<string[]> {
  const { rows } = await db.query<{ channelId: string }>(
    `SELECT DISTINCT channel_id AS "channelId" FROM notifications
      WHERE alert_id = :alertId::uuid AND event IN ('alert.created', 'alert.escalated')
        AND status IN ('pending', 'delivered', 'throttled', 'digested')`,
    { alertId },
  );
  return rows.map((row) => row.channelId);
}
