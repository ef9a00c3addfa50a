import type { Principal } from '../auth/principal.ts';
import { type Db, one, type Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { selectPage } from '../db/page.ts';
import type { AnchorEvent, LogRecord, StreamFormat } from './formats.ts';
import type { StreamFilter, StreamSource, StreamType } from './schemas.ts';

export type StreamRow = {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  type: StreamType;
  format: StreamFormat;
  endpoint: string;
  caCertificate: string | null;
  streams: StreamSource[];
  filter: StreamFilter;
  hasSecret: boolean;
  createdAt: Date;
  updatedAt: Date;
};

/** A destination with its secret as stored, for a delivery. */
export type DeliverableStream = StreamRow & { secret: string | null; secretSealed: boolean };

export type StoredSecret = { secret: string; sealed: boolean };

const columns = `s.id::text AS id, s.partner_id::text AS "partnerId", s.org_id::text AS "orgId",
  CASE WHEN s.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability, s.name, s.type, s.format, s.endpoint,
  s.ca_certificate AS "caCertificate", s.streams, s.filter, s.secret IS NOT NULL AS "hasSecret",
  s.created_at AS "createdAt", s.updated_at AS "updatedAt"`;

/** The destinations the principal manages: the partner's (and its organizations') or the organization's own. */
function scopeSql(principal: Principal): { where: string; params: Record<string, string | null> } {
  if (principal.scope === 'platform') return { where: 's.deleted_at IS NULL', params: {} };
  if (principal.scope === 'partner')
    return {
      where: 's.deleted_at IS NULL AND s.partner_id = :partnerId::uuid',
      params: { partnerId: principal.partnerId },
    };
  return { where: 's.deleted_at IS NULL AND s.org_id = :orgId::uuid', params: { orgId: principal.orgId } };
}

export async function insertStream(
  tx: Tx,
  values: {
    partnerId: string;
    orgId: string | null;
    name: string;
    type: StreamType;
    format: StreamFormat;
    endpoint: string;
    caCertificate: string | null;
    streams: string[];
    filter: StreamFilter;
  },
  secret: StoredSecret | null,
): Promise<StreamRow> {
  const row = await one<StreamRow>(
    tx,
    `WITH s AS (
       INSERT INTO audit_streams (partner_id, org_id, name, type, format, endpoint, ca_certificate, streams, filter, secret, secret_sealed)
       VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :type::text, :format::text, :endpoint::text, :caCertificate::text,
               :streams::jsonb, :filter::jsonb, :secret::text, :sealed::boolean)
       RETURNING *)
     SELECT ${columns} FROM s`,
    { ...values, secret: secret?.secret ?? null, sealed: secret?.sealed ?? false },
  );
  return row!;
}

/** The head of a stream in organization `o`: the audit chain's seq, or the log's last ordering key (0: none). */
const headSql = (source: string) => `coalesce(CASE ${source}
    WHEN 'audit' THEN (SELECT h.seq FROM audit_chain_heads h WHERE h.org_id = o.id)
    ELSE (SELECT h.seq FROM log_stream_heads h WHERE h.org_id = o.id AND h.source = ${source}) END, 0)`;

/**
 * The cursors of a destination's streams (a new destination's, or the streams a change adds), one per live
 * organization it serves and stream: at the stream's head now (what is written after is delivered), or for the audit
 * trail just before `fromSeq`. A stream added again starts at its head again. An organization created later starts
 * from its first row.
 */
export async function insertCursors(
  tx: Tx,
  stream: StreamRow,
  sources: readonly StreamSource[],
  fromSeq: number | undefined,
): Promise<void> {
  if (sources.length === 0) return;
  // Rows stored before now and still waiting for their key take it first: the cursor starts after them.
  const logSources = sources.filter((source): source is LogSource => source !== 'audit');
  if (logSources.length > 0) {
    const served = await selectServedOrganizations(tx, stream);
    for (const source of logSources) await numberLogRows(tx, served, source);
  }
  await tx.query(
    `WITH heads AS (
       INSERT INTO log_stream_heads (org_id, source, seq)
       SELECT o.id, s.source, 0
         FROM organizations o CROSS JOIN jsonb_array_elements_text(:sources::jsonb) AS s(source)
        WHERE s.source <> 'audit' AND o.deleted_at IS NULL
          AND (o.id = :orgId::uuid OR (:orgId::uuid IS NULL AND o.partner_id = :partnerId::uuid))
       ON CONFLICT (org_id, source) DO NOTHING
     )
     INSERT INTO audit_stream_cursors (stream_id, org_id, source, delivered_seq)
     SELECT :streamId::uuid, o.id, s.source,
            CASE WHEN s.source = 'audit' AND :fromSeq::bigint IS NOT NULL THEN :fromSeq::bigint - 1 ELSE ${headSql('s.source')} END
       FROM organizations o CROSS JOIN jsonb_array_elements_text(:sources::jsonb) AS s(source)
      WHERE o.deleted_at IS NULL
        AND (o.id = :orgId::uuid OR (:orgId::uuid IS NULL AND o.partner_id = :partnerId::uuid))
     ON CONFLICT (stream_id, org_id, source) DO UPDATE
       SET delivered_seq = excluded.delivered_seq, epoch = audit_stream_cursors.epoch + 1, attempts = 0, retry_at = NULL,
           leased_until = NULL, last_error = NULL`,
    {
      streamId: stream.id,
      sources: JSON.stringify(sources),
      fromSeq: fromSeq ?? null,
      orgId: stream.orgId,
      partnerId: stream.partnerId,
    },
  );
}

export function selectStreams(db: Db, principal: Principal, page: Page) {
  const scope = scopeSql(principal);
  return selectPage<StreamRow>(
    db,
    columns,
    `audit_streams s WHERE ${scope.where}`,
    's.created_at, s.id',
    scope.params,
    page,
  );
}

export function selectStream(db: Db, principal: Principal, id: string): Promise<StreamRow | undefined> {
  const scope = scopeSql(principal);
  return one<StreamRow>(db, `SELECT ${columns} FROM audit_streams s WHERE s.id = :id::uuid AND ${scope.where}`, {
    ...scope.params,
    id,
  });
}

export async function updateStreamRow(
  tx: Tx,
  id: string,
  fields: {
    name?: string;
    format?: StreamFormat;
    endpoint?: string;
    caCertificate?: string | null;
    streams?: string[];
    filter?: StreamFilter;
  },
  secret: StoredSecret | undefined,
): Promise<StreamRow> {
  const row = await one<StreamRow>(
    tx,
    `WITH s AS (
       UPDATE audit_streams SET
         name = coalesce(:name::text, name),
         format = coalesce(:format::text, format),
         endpoint = coalesce(:endpoint::text, endpoint),
         ca_certificate = CASE WHEN :caGiven::boolean THEN :caCertificate::text ELSE ca_certificate END,
         streams = coalesce(:streams::jsonb, streams),
         filter = coalesce(:filter::jsonb, filter),
         secret = coalesce(:secret::text, secret),
         secret_sealed = coalesce(:sealed::boolean, secret_sealed),
         updated_at = now()
       WHERE id = :id::uuid RETURNING *)
     SELECT ${columns} FROM s`,
    {
      id,
      name: fields.name ?? null,
      format: fields.format ?? null,
      endpoint: fields.endpoint ?? null,
      caGiven: fields.caCertificate !== undefined,
      caCertificate: fields.caCertificate ?? null,
      streams: fields.streams ?? null,
      filter: fields.filter ?? null,
      secret: secret?.secret ?? null,
      sealed: secret?.sealed ?? null,
    },
  );
  return row!;
}

export async function softDeleteStream(tx: Tx, id: string): Promise<void> {
  await tx.query('UPDATE audit_streams SET deleted_at = now() WHERE id = :id::uuid', { id });
}

export async function updateStreamSecretSealed(db: Db, id: string, clear: string, sealed: string): Promise<void> {
  await db.query(
    `UPDATE audit_streams SET secret = :sealed::text, secret_sealed = true
      WHERE id = :id::uuid AND secret = :clear::text AND NOT secret_sealed`,
    { id, clear, sealed },
  );
}

/** The live destinations of an organization: its own and its partner's. */
export async function selectDestinationsOf(db: Db, orgId: string): Promise<DeliverableStream[]> {
  const { rows } = await db.query<DeliverableStream>(
    `SELECT ${columns}, s.secret, s.secret_sealed AS "secretSealed"
       FROM audit_streams s JOIN organizations o ON o.id = :orgId::uuid
      WHERE s.deleted_at IS NULL AND o.deleted_at IS NULL
        AND (s.org_id = o.id OR (s.org_id IS NULL AND s.partner_id = o.partner_id))
      ORDER BY s.created_at, s.id`,
    { orgId },
  );
  return rows;
}

/** One destination with its secret as stored. */
export function selectDeliverableStream(db: Db, id: string): Promise<DeliverableStream | undefined> {
  return one<DeliverableStream>(
    db,
    `SELECT ${columns}, s.secret, s.secret_sealed AS "secretSealed" FROM audit_streams s WHERE s.id = :id::uuid`,
    { id },
  );
}

/** A destination's cursor in one stream of one organization, held by the delivery that claimed it. */
export type Cursor = {
  deliveredSeq: number;
  epoch: number;
  attempts: number;
  retryAt: Date | null;
  /** Whether a signed anchor not streamed yet exists (the audit trail's): only then are anchors read. */
  anchorsWaiting: boolean;
};

/** Which cursor: a destination's, in one organization, of one stream. */
export type CursorKey = { streamId: string; orgId: string; source: StreamSource };

const whereKey = 'stream_id = :streamId::uuid AND org_id = :orgId::uuid AND source = :source::text';
const whereCursor = 'c.stream_id = :streamId::uuid AND c.org_id = :orgId::uuid AND c.source = :source::text';

/** Whether a signed anchor of the organization not streamed yet by cursor `c` exists (the audit trail's). */
const anchorsWaitingSql = `c.source = 'audit' AND EXISTS (SELECT FROM audit_anchors a
  WHERE a.org_id = c.org_id AND a.anchored_at > c.anchors_after)`;

/** A claim: the cursor, or another delivery holds it (`held`: until when, and whether it was marked already). */
export type Claim = { cursor: Cursor } | { held: { until: Date; marked: boolean } };

/**
 * Claims the cursor of (destination, organization, stream) for `leaseSeconds`, in one statement, starting a new epoch:
 * every later move of the cursor names it, so a delivery whose lease was lost (and taken by another) moves nothing.
 * Held by another delivery, the cursor is marked `pending` instead: that delivery goes on once more before it lets the cursor go
 * (releaseCursor), so what the caller was armed for is delivered without a job of its own. A cursor not made yet (an
 * organization created after its partner's destination) is made at the organization's start (a log stream's keys
 * start there, with its head) and claimed.
 */
export async function claimCursor(db: Db, key: CursorKey, leaseSeconds: number): Promise<Claim> {
  const claimed = await one<Cursor & { claimed: boolean; marked: boolean; leasedUntil: Date }>(
    db,
    `WITH old AS (
       SELECT pending, leased_until IS NULL OR leased_until < now() AS free FROM audit_stream_cursors
        WHERE ${whereKey} FOR UPDATE
     )
     UPDATE audit_stream_cursors c
        SET leased_until = CASE WHEN old.free THEN now() + make_interval(secs => :lease::int) ELSE c.leased_until END,
            pending = NOT old.free, epoch = CASE WHEN old.free THEN c.epoch + 1 ELSE c.epoch END
       FROM old
      WHERE ${whereCursor}
      RETURNING old.free AS claimed, old.pending AS marked, c.leased_until AS "leasedUntil",
                c.delivered_seq AS "deliveredSeq", c.epoch, c.attempts, c.retry_at AS "retryAt",
                ${anchorsWaitingSql} AS "anchorsWaiting"`,
    { ...key, lease: leaseSeconds },
  );
  if (!claimed) {
    await db.query(
      `WITH head AS (
         INSERT INTO log_stream_heads (org_id, source, seq)
         SELECT :orgId::uuid, :source::text, 0 WHERE :source::text <> 'audit'
         ON CONFLICT (org_id, source) DO NOTHING
       )
       INSERT INTO audit_stream_cursors (stream_id, org_id, source, delivered_seq)
       VALUES (:streamId::uuid, :orgId::uuid, :source::text, 0)
       ON CONFLICT (stream_id, org_id, source) DO NOTHING`,
      key,
    );
    return claimCursor(db, key, leaseSeconds);
  }
  const { claimed: free, marked, leasedUntil, ...cursor } = claimed;
  return free ? { cursor } : { held: { until: leasedUntil, marked } };
}

/**
 * Moves the cursor to `seq` once the receiver took everything up to it (and past the anchors sent, `anchoredAt`),
 * and extends the lease; false when the delivery no longer holds it (a replay moved it, or its lease was lost: the
 * epoch changed): the delivery stops, and the replay's own job, or the new holder, goes on.
 */
export async function advanceCursor(
  db: Db,
  key: CursorKey & { epoch: number },
  seq: number,
  leaseSeconds: number,
  anchoredAt?: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE audit_stream_cursors
        SET delivered_seq = :seq::bigint, delivered_at = now(), attempts = 0, retry_at = NULL, last_error = NULL,
            leased_until = now() + make_interval(secs => :lease::int),
            anchors_after = coalesce(:anchoredAt::timestamptz, anchors_after)
      WHERE ${whereKey} AND epoch = :epoch::int`,
    { ...key, seq, lease: leaseSeconds, anchoredAt: anchoredAt ?? null },
  );
  return rowCount === 1;
}

/**
 * The last page taken: moves the cursor to `seq` (and past the anchors sent) and lets it go, unless another delivery
 * marked it meanwhile (then it stays held, `again`), in one statement. Undefined when a replay moved the cursor
 * meanwhile (its epoch changed).
 */
export async function finishCursor(
  db: Db,
  key: CursorKey & { epoch: number },
  seq: number,
  leaseSeconds: number,
  anchoredAt?: Date,
): Promise<{ again: boolean; anchorsWaiting: boolean } | undefined> {
  return one<{ again: boolean; anchorsWaiting: boolean }>(
    db,
    `WITH old AS (SELECT pending FROM audit_stream_cursors WHERE ${whereKey} AND epoch = :epoch::int FOR UPDATE)
     UPDATE audit_stream_cursors c
        SET delivered_seq = :seq::bigint, delivered_at = now(), attempts = 0, retry_at = NULL, last_error = NULL,
            anchors_after = coalesce(:anchoredAt::timestamptz, c.anchors_after),
            leased_until = CASE WHEN old.pending THEN now() + make_interval(secs => :lease::int) END, pending = false
       FROM old
      WHERE ${whereCursor}
      RETURNING old.pending AS again, ${anchorsWaitingSql} AS "anchorsWaiting"`,
    { ...key, seq, lease: leaseSeconds, anchoredAt: anchoredAt ?? null },
  );
}

/**
 * Extends the lease of a delivery still running (its heartbeat, while a slow receiver takes a page), so no other
 * delivery claims the cursor meanwhile; false when the delivery no longer holds it (its epoch changed, or it was let
 * go: a heartbeat that comes after the release extends nothing).
 */
export async function extendLease(db: Db, key: CursorKey & { epoch: number }, leaseSeconds: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE audit_stream_cursors SET leased_until = now() + make_interval(secs => :lease::int)
      WHERE ${whereKey} AND epoch = :epoch::int AND leased_until IS NOT NULL`,
    { ...key, lease: leaseSeconds },
  );
  return rowCount === 1;
}

/**
 * Records a failed attempt, when the next one is due, and lets the cursor go (its retry covers any mark); a delivery
 * that no longer holds the cursor (its epoch changed) records nothing.
 */
export async function failCursor(
  db: Db,
  key: CursorKey & { epoch: number },
  error: string,
  retryAt: Date,
): Promise<void> {
  await db.query(
    `UPDATE audit_stream_cursors
        SET attempts = attempts + 1, retry_at = :retryAt::timestamptz, last_error = :error::text, last_error_at = now(),
            leased_until = NULL, pending = false
      WHERE ${whereKey} AND epoch = :epoch::int`,
    { ...key, error: error.slice(0, 2000), retryAt },
  );
}

/**
 * Lets the cursor go, unless another delivery marked it meanwhile: then it stays held (the lease extended) and the
 * answer is true, and the caller delivers once more. Answers false once the cursor is free.
 */
export async function releaseCursor(
  db: Db,
  key: CursorKey & { epoch: number },
  leaseSeconds: number,
): Promise<{ again: boolean; anchorsWaiting: boolean }> {
  const held = await one<{ again: boolean; anchorsWaiting: boolean }>(
    db,
    `WITH old AS (SELECT pending FROM audit_stream_cursors WHERE ${whereKey} AND epoch = :epoch::int FOR UPDATE)
     UPDATE audit_stream_cursors c
        SET leased_until = CASE WHEN old.pending THEN now() + make_interval(secs => :lease::int) END, pending = false
       FROM old
      WHERE ${whereCursor}
      RETURNING old.pending AS again, ${anchorsWaitingSql} AS "anchorsWaiting"`,
    { ...key, lease: leaseSeconds },
  );
  return held ?? { again: false, anchorsWaiting: false };
}

/** Lets the cursor go (a delivery that found its retry not due yet: the retry covers any mark). */
export async function letCursorGo(db: Db, key: CursorKey & { epoch: number }): Promise<void> {
  await db.query(
    `UPDATE audit_stream_cursors SET leased_until = NULL, pending = false WHERE ${whereKey} AND epoch = :epoch::int`,
    key,
  );
}

/** Moves the cursor back to just before `fromSeq` (a replay): a new epoch, and the next attempt due at once. */
export async function replayCursor(tx: Tx, key: CursorKey, fromSeq: number): Promise<void> {
  await tx.query(
    `INSERT INTO audit_stream_cursors (stream_id, org_id, source, delivered_seq)
     VALUES (:streamId::uuid, :orgId::uuid, :source::text, :seq::bigint)
     ON CONFLICT (stream_id, org_id, source) DO UPDATE
       SET delivered_seq = excluded.delivered_seq, epoch = audit_stream_cursors.epoch + 1, attempts = 0, retry_at = NULL,
           leased_until = NULL, pending = false`,
    { ...key, seq: fromSeq - 1 },
  );
}

/** The live organizations a destination serves (one, or every one of its partner). */
export async function selectServedOrganizations(db: Db, stream: StreamRow): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT o.id::text AS id FROM organizations o
      WHERE o.deleted_at IS NULL AND (o.id = :orgId::uuid OR (:orgId::uuid IS NULL AND o.partner_id = :partnerId::uuid))
      ORDER BY o.id`,
    { orgId: stream.orgId, partnerId: stream.partnerId },
  );
  return rows.map((row) => row.id);
}

export type CursorStatus = {
  orgId: string;
  source: StreamSource;
  lastDeliveredSeq: number;
  lastDeliveredAt: Date | null;
  lagRows: number;
  lagSeconds: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
};

/**
 * Where the destination stands in each organization it serves and each stream (the audit trail always, and every
 * stream it receives): the last key delivered, how many keys and how many seconds (since the oldest row not delivered
 * yet was stored) it is behind, and its last error. Ordered by organization, the audit trail first.
 */
export async function selectCursorStatus(db: Db, stream: StreamRow, orgId?: string): Promise<CursorStatus[]> {
  const { rows } = await db.query<CursorStatus>(
    `SELECT o.id::text AS "orgId", s.source, coalesce(c.delivered_seq, 0) AS "lastDeliveredSeq",
            c.delivered_at AS "lastDeliveredAt", greatest(${headSql('s.source')} - coalesce(c.delivered_seq, 0), 0) + (CASE s.source
              WHEN 'device-events' THEN (SELECT count(*) FROM device_event_logs e WHERE e.org_id = o.id AND e.stream_seq < 0)
              WHEN 'agent-logs' THEN (SELECT count(*) FROM agent_logs l WHERE l.org_id = o.id AND l.stream_seq < 0)
              ELSE 0 END)::int AS "lagRows",
            coalesce(extract(epoch FROM greatest(now() - (CASE s.source
              WHEN 'audit' THEN (SELECT a.timestamp FROM audit_logs a
                WHERE a.org_id = o.id AND a.seq > coalesce(c.delivered_seq, 0) ORDER BY a.seq LIMIT 1)
              WHEN 'device-events' THEN least((SELECT e.created_at FROM device_event_logs e
                WHERE e.org_id = o.id AND e.stream_seq > coalesce(c.delivered_seq, 0) ORDER BY e.stream_seq LIMIT 1),
                (SELECT min(e.created_at) FROM device_event_logs e WHERE e.org_id = o.id AND e.stream_seq < 0))
              ELSE least((SELECT l.created_at FROM agent_logs l
                WHERE l.org_id = o.id AND l.stream_seq > coalesce(c.delivered_seq, 0) ORDER BY l.stream_seq LIMIT 1),
                (SELECT min(l.created_at) FROM agent_logs l WHERE l.org_id = o.id AND l.stream_seq < 0))
              END), interval '0')), 0)::float8 AS "lagSeconds",
            c.retry_at AS "nextAttemptAt", c.last_error AS "lastError"
       FROM organizations o
      CROSS JOIN (SELECT 'audit' AS source, 0 AS n
                  UNION SELECT source, 1 FROM jsonb_array_elements_text(:sources::jsonb) AS e(source) WHERE source <> 'audit') s
       LEFT JOIN audit_stream_cursors c ON c.stream_id = :streamId::uuid AND c.org_id = o.id AND c.source = s.source
      WHERE o.deleted_at IS NULL AND (o.id = :orgId::uuid OR (:orgId::uuid IS NULL AND o.partner_id = :partnerId::uuid))
        AND (:only::uuid IS NULL OR o.id = :only::uuid)
      ORDER BY o.id, s.n, s.source`,
    {
      streamId: stream.id,
      sources: JSON.stringify(stream.streams),
      orgId: stream.orgId,
      partnerId: stream.partnerId,
      only: orgId ?? null,
    },
  );
  return rows;
}

/**
 * Numbers the log rows of these organizations that wait for their key (a negative `stream_seq`, stored while a head
 * existed; shared/db/stream-keys.ts), in the order they were stored, after each organization's head, and moves the head past them: in the
 * caller's transaction, which holds the heads until it ends. Concurrent numberings of an organization wait for each
 * other here, and the second finds the rows the first numbered (its statement sees what committed before it): every
 * committed row gets one key, keys only grow, and a key is visible with every key below it. Answers the rows numbered.
 */
async function numberLogRows(tx: Tx, orgIds: readonly string[], source: LogSource): Promise<number> {
  if (orgIds.length === 0) return 0;
  const table = source === 'device-events' ? 'device_event_logs' : 'agent_logs';
  const params = { orgIds: JSON.stringify(orgIds), source };
  const orgs = 'ARRAY(SELECT jsonb_array_elements_text(:orgIds::jsonb)::uuid)';
  const { rows: heads } = await tx.query(
    `SELECT org_id FROM log_stream_heads WHERE org_id = ANY (${orgs}) AND source = :source::text
      ORDER BY org_id FOR UPDATE`,
    params,
  );
  if (heads.length === 0) return 0;
  const { rows } = await tx.query<{ numbered: number }>(
    `WITH waiting AS (
       SELECT r.id, r.org_id, h.seq + row_number() OVER (PARTITION BY r.org_id ORDER BY r.stream_seq DESC) AS key
         FROM ${table} r JOIN log_stream_heads h ON h.org_id = r.org_id AND h.source = :source::text
        WHERE r.org_id = ANY (${orgs}) AND r.stream_seq < 0
     ),
     numbered AS (
       UPDATE ${table} r SET stream_seq = w.key FROM waiting w
        WHERE r.id = w.id AND r.org_id = w.org_id AND r.stream_seq < 0
       RETURNING r.org_id, r.stream_seq
     ),
     moved AS (
       UPDATE log_stream_heads h SET seq = n.last
         FROM (SELECT org_id, max(stream_seq) AS last FROM numbered GROUP BY org_id) n
        WHERE h.org_id = n.org_id AND h.source = :source::text
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM numbered)::int AS numbered`,
    params,
  );
  return rows[0]?.numbered ?? 0;
}

/**
 * The organization's rows of a log stream numbered (numberLogRows), and the head after them: every key up to it is
 * committed once the caller's transaction ends (0: no head).
 */
export async function numberedLogHead(tx: Tx, orgId: string, source: LogSource): Promise<number> {
  await numberLogRows(tx, [orgId], source);
  return selectLogHead(tx, orgId, source);
}

/** The last ordering key of a log stream in the organization (0: none yet). */
async function selectLogHead(db: Db, orgId: string, source: LogSource): Promise<number> {
  const head = await one<{ seq: number }>(
    db,
    'SELECT seq FROM log_stream_heads WHERE org_id = :orgId::uuid AND source = :source::text',
    { orgId, source },
  );
  return head?.seq ?? 0;
}

export type LogSource = Exclude<StreamSource, 'audit'>;

const timestampSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The organization's log rows with keys in (afterSeq, untilSeq], in key order, with their device's hostname. */
export async function selectLogPage(
  db: Db,
  source: LogSource,
  orgId: string,
  range: { afterSeq: number; untilSeq: number; rows: number },
): Promise<LogRecord[]> {
  const specific =
    source === 'device-events'
      ? `'device-event' AS type, r.category, r.source, r.event_id AS "eventId", r.details`
      : `'agent-log' AS type, r.component, r.fields, r.agent_version AS "agentVersion"`;
  const { rows } = await db.query<LogRecord>(
    `SELECT ${specific}, r.id::text AS id, r.org_id::text AS "orgId", r.device_id::text AS "deviceId",
            d.hostname, r.stream_seq AS seq, ${timestampSql('r.timestamp')} AS timestamp,
            ${timestampSql('r.created_at')} AS "storedAt", r.level, r.message
       FROM ${source === 'device-events' ? 'device_event_logs' : 'agent_logs'} r
       LEFT JOIN devices d ON d.id = r.device_id
      WHERE r.org_id = :orgId::uuid AND r.stream_seq > :afterSeq::bigint AND r.stream_seq <= :untilSeq::bigint
      ORDER BY r.stream_seq
      LIMIT :rows::int`,
    { orgId, ...range },
  );
  return rows;
}

/** The anchors of an organization taken after the cursor's last streamed one and covering rows up to `seq`. */
export async function selectAnchorsToStream(
  db: Db,
  key: CursorKey,
  seq: number,
): Promise<(AnchorEvent & { anchoredAt: Date })[]> {
  const { rows } = await db.query<AnchorEvent & { anchoredAt: Date }>(
    `SELECT 'anchor' AS type, a.org_id::text AS "orgId", a.seq, a.checksum, a.key_id AS "keyId", a.signature,
            to_char(a.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, a.anchored_at AS "anchoredAt"
       FROM audit_anchors a
       JOIN audit_stream_cursors c ON c.stream_id = :streamId::uuid AND c.org_id = a.org_id AND c.source = 'audit'
      WHERE a.org_id = :orgId::uuid AND a.anchored_at > c.anchors_after AND a.seq <= :seq::bigint
      ORDER BY a.anchored_at, a.seq LIMIT 100`,
    { ...key, seq },
  );
  return rows;
}
