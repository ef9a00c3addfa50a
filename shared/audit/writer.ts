import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { asIp } from '../client-ip.ts';
import { type Db, prepared, type Tx } from '../db/db.ts';
import { issueDetails, ValidationFailed } from '../errors.ts';
import { logger, specifiedLog } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
import { enqueue } from '../queue/work-queue.ts';
import { appendAuditRows, sealIntentsOf } from './grouped-append.ts';
import { type AuditEvent, auditEvent } from './schemas.ts';
import { spoolAuditRow } from './spool.ts';
import { type AuditRowInput, sealAuditIntents, sealOldestIntents, selectWaitingIntentIds } from './store.ts';

export const zeroUuid = '00000000-0000-0000-0000-000000000000';
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Who acts, where from, and the writes still in flight; one per request (or per worker run). */
export interface AuditContext {
  db: Db;
  caller?: Principal | AgentPrincipal | null;
  /** Shown with the actor in the viewer: a user's name and role, an agent's device hostname. */
  actorName?: string | null;
  ipAddress?: string | null;
  userAgent?: string | null;
  /** Writes started for this request; the audit middleware awaits them before the reply leaves. */
  pending: Promise<void>[];
}

/**
 * The row of an event: a non-UUID actorId or resourceId is stored as the zero UUID
 * with the original in details.rawActorId / details.rawResourceId; an ipAddress that is not an IP
 * (node:net isIP, at most 45 characters) is stored as null with the original in details.rawIpAddress.
 * Validates strictly: an event outside the schema throws (400 for POST /audit-logs/events).
 */
export function toAuditRow(event: AuditEvent & { orgId: string }): AuditRowInput {
  const parsed = auditEvent.safeParse(event);
  if (!parsed.success) throw ValidationFailed('Invalid audit event', issueDetails(parsed.error));
  const e = parsed.data;
  const details: Record<string, unknown> = { ...e.details };
  const actorId = uuidPattern.test(e.actorId) ? e.actorId : zeroUuid;
  if (actorId !== e.actorId) details.rawActorId = e.actorId;
  const resourceId = e.resourceId == null || uuidPattern.test(e.resourceId) ? (e.resourceId ?? null) : zeroUuid;
  if (resourceId !== (e.resourceId ?? null)) details.rawResourceId = e.resourceId;
  const ipAddress = e.ipAddress == null ? null : asIp(e.ipAddress);
  if (ipAddress === null && e.ipAddress != null) details.rawIpAddress = e.ipAddress;
  return {
    orgId: event.orgId,
    timestamp: e.timestamp ?? null,
    actorType: e.actorType,
    actorId: actorId.toLowerCase(),
    actorEmail: e.actorEmail ?? null,
    action: e.action,
    resourceType: e.resourceType ?? null,
    resourceId: resourceId?.toLowerCase() ?? null,
    resourceName: e.resourceName ?? null,
    details,
    ipAddress,
    userAgent: e.userAgent ?? null,
    result: e.result,
    errorMessage: e.errorMessage ?? null,
  };
}

/**
 * The low-level writer: validates and appends one event and resolves once it
 * is sealed (grouped with this process's concurrent writes of the organization, grouped-append.ts).
 * An event without orgId is dropped with a warning (silent in tests).
 */
export async function writeAuditEvent(context: AuditContext, event: AuditEvent): Promise<void> {
  if (!event.orgId) {
    specifiedLog.auditEventDropped(event.action);
    return;
  }
  await appendAuditRows(context.db, [toAuditRow({ ...event, orgId: event.orgId })]);
}

/**
 * Starts the write at once and never lets it fail the request. In Lambda an
 * unawaited promise is frozen with the environment, so the write is kept in `pending` and the
 * audit middleware awaits it before the reply leaves (docs/audit.md).
 */
export function createAuditLogAsync(context: AuditContext, event: AuditEvent): void {
  track(context, [event], writeAuditEvent(context, event));
}

function track(context: AuditContext, events: AuditEvent[], write: Promise<unknown>): void {
  // The instant of the events, kept if the write has to be spooled and replayed later.
  const happenedAt = new Date().toISOString();
  const stored = events.filter((event) => event.orgId);
  // The fixed log line operators search for, and a metric to alarm on.
  const tracked = write.then(
    () => {
      if (stored.length > 0) countMetric('AuditEventsWritten', stored.length);
    },
    async (error: unknown) => {
      countMetric('AuditWriteFailures');
      specifiedLog.auditWriteFailed(events[0]!.action, error);
      for (const event of stored) {
        // An event the schema refuses would fail again on replay: only a write the database refused is spooled.
        let row: AuditRowInput;
        try {
          row = toAuditRow({ ...event, orgId: event.orgId!, timestamp: event.timestamp ?? happenedAt });
        } catch {
          countMetric('AuditEventsFailedPermanently');
          continue;
        }
        await spoolAuditRow(row);
      }
    },
  );
  context.pending.push(tracked);
}

/**
 * Column limits of audit_logs, in characters. user_agent is text: 4,096 characters keep every real
 * user agent whole and bound what a caller can make the trail store. actorId and resourceId are raw identifiers
 * (a non-UUID is kept in details), errorMessage as the event schema bounds it.
 */
const columnLimits = {
  actorId: 255,
  actorEmail: 255,
  action: 100,
  resourceType: 50,
  resourceId: 255,
  resourceName: 255,
  ipAddress: 255,
  userAgent: 4096,
  errorMessage: 10_000,
} as const;

/**
 * Text PostgreSQL can store: a lone UTF-16 surrogate (which JSON.stringify writes as \ud800, refused by jsonb)
 * and NUL (refused by text and jsonb alike) become U+FFFD.
 */
const storable = (text: string) => text.toWellFormed().replaceAll('\u0000', '\ufffd');

/** At most `max` characters (code points, as varchar(n) counts them), storable. */
function clip(text: string, max: number): string {
  const clean = storable(text);
  if (clean.length <= max) return clean;
  let end = 0;
  let points = 0;
  for (const point of clean) {
    if (points === max) break;
    end += point.length;
    points += 1;
  }
  return clean.slice(0, end);
}

/** A JSON value with every string, keys included, made storable (what JSON.stringify would send, minus the failures). */
function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storable(value);
  if (value === null || typeof value !== 'object') return value;
  const json = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof json === 'function') return storableJson(json.call(value));
  if (Array.isArray(value)) return value.map(storableJson);
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storable(key), storableJson(item)]));
}

/**
 * A route's event made writable whatever the request sent, so no caller can suppress its own audit row with a
 * value it controls (a header, a field that ends up in details): every string storable, every text cut to its
 * column's limit (a user agent to 4,096 characters), an IP that is not one kept in details.rawIpAddress
 * (toAuditRow). Only what the code itself sets (actorType, action, timestamp) can still fail validation.
 */
function writable(event: AuditEvent): AuditEvent {
  const text = (value: string | null | undefined, max: number) => (value == null ? value : clip(value, max));
  return {
    ...event,
    actorId: clip(event.actorId, columnLimits.actorId),
    actorEmail: text(event.actorEmail, columnLimits.actorEmail),
    action: text(event.action, columnLimits.action)!,
    resourceType: text(event.resourceType, columnLimits.resourceType),
    resourceId: text(event.resourceId, columnLimits.resourceId),
    resourceName: text(event.resourceName, columnLimits.resourceName),
    details: event.details && (storableJson(event.details) as Record<string, unknown>),
    ipAddress: text(event.ipAddress, columnLimits.ipAddress),
    userAgent: text(event.userAgent, columnLimits.userAgent),
    errorMessage: text(event.errorMessage, columnLimits.errorMessage),
  };
}

export type RouteEvent = Omit<AuditEvent, 'actorType' | 'actorId' | 'actorEmail'> & { orgId: string | null };

/**
 * For route handlers of events without a change of their own (a read recorded as data.access, an export): the actor
 * (id, e-mail, and name/role for the viewer) is taken from the authenticated caller, the IP and user agent from the
 * request. A change is audited with auditChange, in its own transaction.
 */
export function writeRouteAudit(context: AuditContext, event: RouteEvent): void {
  createAuditLogAsync(context, routeEvent(context, event));
}

function routeEvent(context: AuditContext, event: RouteEvent): AuditEvent {
  const caller = context.caller;
  const actor =
    caller?.actorType === 'agent'
      ? {
          actorType: 'agent' as const,
          actorId: caller.agentId,
          actorEmail: null,
          name: context.actorName ?? null,
          role: null,
        }
      : caller
        ? {
            actorType: caller.actorType,
            actorId: caller.id,
            actorEmail: caller.email,
            name: caller.name,
            role: caller.role,
          }
        : { actorType: 'system' as const, actorId: zeroUuid, actorEmail: null, name: null, role: null };
  return writable({
    ipAddress: context.ipAddress,
    userAgent: context.userAgent,
    ...event,
    actorType: actor.actorType,
    actorId: actor.actorId,
    actorEmail: actor.actorEmail,
    details: { ...event.details, actor: { name: actor.name, role: actor.role } },
  });
}

/**
 * For a route (or a job) that changes data: records the change's events, with the actor of writeRouteAudit, in the
 * change's own transaction as audit intents, sealed into the chain once the change has committed (docs/audit.md
 * "Atomic audit"). The change and its audit rows commit together or not at all, so a change never stands without its
 * rows, and a change that rolled back has none. Writing them never fails the change: an intent the database refuses
 * is logged ("[audit] Failed to write audit log:") and its rows spooled once the change has committed; a seal that
 * fails after the commit is logged, and its intents wait for the sweep (sealWaitingIntents), which seals each once.
 */
export async function auditChange(tx: Tx, context: AuditContext, events: RouteEvent | RouteEvent[]): Promise<void> {
  await auditChangeWith(tx, context, events, async (entries) => {
    if (entries.length === 0) return { entries, ids: null, failure: null, answer: undefined };
    const { rows } = await tx.query<{ ids: string | null; failure: string | null }>(addIntentsSql, { entries });
    return { entries, ids: rows[0]?.ids ?? null, failure: rows[0]?.failure ?? null, answer: undefined };
  });
}

/** What a change's own statement answers when it also adds the change's audit intents (auditChangeWith). */
export interface IntentsAdded<T> {
  /** The rows it added, completed by the statement (an event the change did not make left out). */
  entries: AuditRowInput[];
  /** audit_intents_add's answer: the ids, comma-separated in the order of `entries`, or its failure. */
  ids: string | null;
  failure: string | null;
  /**
   * Committed intents of earlier changes that these rows follow (a change completing another): sealed in the same
   * statement, before these; one sealed already is skipped.
   */
  follows?: string[];
  /** The change's own answer. */
  answer: T;
}

/**
 * auditChange with the intents added by the statement that makes the change (one round trip less): `write` is given
 * the events' rows and adds them with audit_intents_add, completing a row with what only the statement knows (a number
 * it took), leaving out the row of an event the change did not make, or adding rows kept by an earlier change. The
 * answer, the failures and the seal are auditChange's.
 */
export async function auditChangeWith<T>(
  tx: Tx,
  context: AuditContext,
  events: RouteEvent | RouteEvent[],
  write: (entries: AuditRowInput[]) => Promise<IntentsAdded<T>>,
): Promise<T> {
  const rows: AuditRowInput[] = [];
  for (const event of (Array.isArray(events) ? events : [events]).map((each) => routeEvent(context, each))) {
    if (!event.orgId) {
      specifiedLog.auditEventDropped(event.action);
      continue;
    }
    try {
      rows.push(toAuditRow({ ...event, orgId: event.orgId }));
    } catch (error) {
      countMetric('AuditWriteFailures');
      countMetric('AuditEventsFailedPermanently');
      specifiedLog.auditWriteFailed(event.action, error);
    }
  }
  const happenedAt = new Date().toISOString();
  const added = await write(rows);
  const written = added.entries;
  if (written.length === 0) return added.answer;
  const ids = added.ids?.split(',');
  if (!ids || ids.length !== written.length) {
    const failure = added.failure ?? 'the audit intents were not stored';
    countMetric('AuditWriteFailures');
    specifiedLog.auditWriteFailed(written[0]!.action, new Error(failure));
    tx.afterCommit(() =>
      context.pending.push(spoolRows(written.map((row) => ({ ...row, timestamp: row.timestamp ?? happenedAt })))),
    );
    return added.answer;
  }
  const sealed = [...(added.follows ?? []), ...ids];
  tx.afterCommit(() => context.pending.push(sealCommitted(context.db, written, sealed)));
  // A COMMIT that failed on its way may still land, with these intents: the sweep is armed for them.
  tx.ifCommitUnknown(() => context.pending.push(enqueue({ kind: 'audit.seal' }, sweepDelaySeconds)));
  return added.answer;
}

/** Prepared once per connection, as the trail's own insert. */
const addIntentsSql = prepared(
  'logbook_audit_intents_add',
  'SELECT ids, failure FROM audit_intents_add(:entries::jsonb)',
);

async function spoolRows(rows: AuditRowInput[]): Promise<void> {
  for (const row of rows) await spoolAuditRow(row);
}

/**
 * Seals a committed change's intents: grouped with the process's other seals of the organization, or, for a change of
 * several organizations (a partner-wide one), in one statement of their own, as appendAuditRows does. A failure is
 * logged, and the sweep is armed.
 */
async function sealCommitted(db: Db, rows: AuditRowInput[], ids: string[]): Promise<void> {
  const orgId = rows[0]!.orgId;
  try {
    if (rows.every((row) => row.orgId === orgId)) await sealIntentsOf(db, orgId, ids);
    else await sealAuditIntents(db, ids);
    countMetric('AuditEventsWritten', rows.length);
    await sweepOnStart(db);
  } catch (error) {
    countMetric('AuditWriteFailures');
    specifiedLog.auditWriteFailed(rows[0]!.action, error);
    // The intents are committed: the sweep seals them, once the database answers again.
    await enqueue({ kind: 'audit.seal' }, sweepDelaySeconds);
  }
}

/** Whether this process has swept since it started. */
let swept = false;

/**
 * A process's first seal also sweeps: a Lambda instance that stopped between a change's commit and its seal (a timeout)
 * armed nothing, and its intents are sealed by the next instance that makes a change, if no job sealed them first.
 * A request that changes nothing never pays for it.
 */
async function sweepOnStart(db: Db): Promise<void> {
  if (swept) return;
  swept = true;
  await sealWaitingIntents(db).catch((error: unknown) => {
    swept = false;
    logger.error('[audit] Could not seal the waiting audit intents', {
      error: error instanceof Error ? error.message : String(error),
    });
  });
}

/** How long after a failed seal the sweep runs: long enough for a database that failed over or resumed to answer. */
const sweepDelaySeconds = 30;

/** Intents sealed by one statement of the sweep. */
const sweepBatch = 500;

/**
 * The sweep: seals every committed audit intent not sealed yet, oldest first, each exactly once (a request sealing its
 * own at the same moment waits for, or skips, what the sweep took). Run at a process's start (a local server's, and
 * each Lambda instance's first request), by the queue worker, and as the `audit.seal` job a failed seal arms. A batch
 * the trail refuses (a data or constraint error) is sealed one intent at a time, and an intent refused alone is
 * logged, counted and passed over, so it never holds back the ones after it. Answers how many it sealed.
 */
export async function sealWaitingIntents(db: Db): Promise<number> {
  let sealed = 0;
  let after = '0';
  for (;;) {
    let count: number;
    try {
      count = await sealOldestIntents(db, sweepBatch, after);
    } catch (error) {
      if (!isDataError(error)) throw error;
      const passed = await sealOneByOne(db, after);
      sealed += passed.sealed;
      if (passed.last === undefined) break;
      after = passed.last;
      continue;
    }
    sealed += count;
    if (count < sweepBatch) break;
  }
  if (sealed > 0) countMetric('AuditIntentsSweptLate', sealed);
  return sealed;
}

const isDataError = (error: unknown) => /^2[23]/.test(String((error as { code?: unknown }).code ?? ''));

/** One batch of the sweep, an intent at a time: answers how many it sealed, and the last id it tried. */
async function sealOneByOne(db: Db, after: string): Promise<{ sealed: number; last: string | undefined }> {
  let sealed = 0;
  let last: string | undefined;
  for (const id of await selectWaitingIntentIds(db, sweepBatch, after)) {
    last = id;
    try {
      sealed += (await sealAuditIntents(db, [id])).length;
    } catch (error) {
      if (!isDataError(error)) throw error;
      countMetric('AuditEventsFailedPermanently');
      logger.error('[audit] The trail refuses a waiting audit intent; it is kept and passed over', {
        intentId: id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { sealed, last };
}

/** Awaits every write of the request; failures were already logged. */
export async function flushAudit(context: AuditContext): Promise<void> {
  await Promise.allSettled(context.pending);
}
