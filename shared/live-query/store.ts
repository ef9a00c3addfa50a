import { type Db, one } from '../db/db.ts';

/** Connections (migration 0009): one per device; the latest $connect of an agent wins. */
export async function upsertConnection(
  db: Db,
  connection: { connectionId: string; agentId: string; deviceId: string; orgId: string; sourceIp: string | null },
  /** SQL expressions over :deviceId read in the same statement (what waits for the connection): their values. */
  reads: readonly string[],
): Promise<{ previousConnectionId: string | null; found: unknown[] }> {
  const row = await one<{ previousConnectionId: string | null; found: unknown[] }>(
    db,
    `WITH previous AS (SELECT connection_id FROM agent_connections WHERE device_id = :deviceId::uuid)
     INSERT INTO agent_connections AS c (connection_id, agent_id, device_id, org_id, source_ip)
     VALUES (:connectionId::text, :agentId::uuid, :deviceId::uuid, :orgId::uuid, :sourceIp::text)
     ON CONFLICT (device_id) DO UPDATE
        SET connection_id = EXCLUDED.connection_id, agent_id = EXCLUDED.agent_id, org_id = EXCLUDED.org_id,
            source_ip = EXCLUDED.source_ip, connected_at = now()
     RETURNING (SELECT connection_id FROM previous) AS "previousConnectionId",
               jsonb_build_array(${reads.map((read) => `(${read})`).join(', ')}) AS found`,
    connection,
  );
  return { previousConnectionId: row?.previousConnectionId ?? null, found: row?.found ?? [] };
}

/**
 * Forgets a connection ($disconnect, or Gone); a newer connection of the device is kept. The device was seen until
 * now: its last seen advances (a heap-only update, as a heartbeat's). Answers its device, organization and that time, or undefined
 * when the connection was no longer the device's.
 */
export async function deleteConnectionRow(db: Db, connectionId: string) {
  return one<{ deviceId: string; orgId: string; lastSeenAt: Date }>(
    db,
    `WITH gone AS (DELETE FROM agent_connections WHERE connection_id = :connectionId::text RETURNING device_id)
     UPDATE devices d SET last_seen_at = greatest(d.last_seen_at, now())
       FROM gone WHERE d.id = gone.device_id
     RETURNING d.id AS "deviceId", d.org_id AS "orgId", d.last_seen_at AS "lastSeenAt"`,
    { connectionId },
  );
}

/**
 * Forgets a connection API Gateway called gone, unless it connected within the last 30 seconds: until its $connect
 * handler returns (29 s at most) a new connection cannot be posted to, and is pending, not gone.
 */
export async function deleteGoneConnectionRow(db: Db, connectionId: string): Promise<void> {
  await db.query(
    `DELETE FROM agent_connections WHERE connection_id = :connectionId::text AND connected_at < now() - interval '30 seconds'`,
    { connectionId },
  );
}

export async function selectConnection(db: Db, deviceId: string): Promise<string | undefined> {
  const row = await one<{ connectionId: string }>(
    db,
    'SELECT connection_id AS "connectionId" FROM agent_connections WHERE device_id = :deviceId::uuid',
    { deviceId },
  );
  return row?.connectionId;
}

/**
 * The live agent a connection belongs to and the source IP its $connect came from; undefined when the connection is
 * gone, or its agent was revoked, its device or organization deleted since.
 */
export function selectConnectionAgent(db: Db, connectionId: string) {
  return one<{ agentId: string; deviceId: string; orgId: string; sourceIp: string | null }>(
    db,
    `SELECT c.agent_id AS "agentId", c.device_id AS "deviceId", c.org_id AS "orgId", c.source_ip AS "sourceIp"
       FROM agent_connections c
       JOIN agents a ON a.id = c.agent_id
       JOIN devices d ON d.id = c.device_id
       JOIN organizations o ON o.id = d.org_id
      WHERE c.connection_id = :connectionId::text AND a.revoked_at IS NULL AND d.deleted_at IS NULL AND o.deleted_at IS NULL`,
    { connectionId },
  );
}

/** A pending query; rows of askers that died are removed a minute after they expired. */
export async function insertRequest(
  db: Db,
  request: { requestId: string; deviceId: string; connectionId: string; type: string; timeoutMs: number },
): Promise<void> {
  await db.query(
    `WITH abandoned AS (DELETE FROM live_requests WHERE expires_at < now() - interval '1 minute')
     INSERT INTO live_requests (request_id, device_id, connection_id, type, expires_at)
     VALUES (:requestId::uuid, :deviceId::uuid, :connectionId::text, :type::text, now() + :timeoutMs::int * interval '1 millisecond')`,
    request,
  );
}

export async function deleteRequest(db: Db, requestId: string): Promise<void> {
  await db.query('DELETE FROM live_requests WHERE request_id = :requestId::uuid', { requestId });
}

/**
 * Stores one piece of an answer, only when it comes from the connection the query is waiting on,
 * before the query expired, and agrees with the piece count given first. Returns whether it was kept.
 */
export async function insertChunk(
  db: Db,
  piece: { requestId: string; connectionId: string; chunk: number; chunks: number; data: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH owner AS (
       UPDATE live_requests SET chunks = :chunks::int
        WHERE request_id = :requestId::uuid AND connection_id = :connectionId::text AND expires_at > now()
          AND (chunks IS NULL OR chunks = :chunks::int)
       RETURNING request_id)
     INSERT INTO live_request_chunks (request_id, connection_id, chunk, data)
     SELECT request_id, :connectionId::text, :chunk::int, :data::text FROM owner
     ON CONFLICT (request_id, connection_id, chunk) DO NOTHING`,
    piece,
  );
  return rowCount > 0;
}

export interface RequestState {
  /** The connection the query was sent on. */
  connectionId: string;
  /** The device's connection now (null: none). */
  currentConnectionId: string | null;
  chunks: number | null;
  received: number;
}

export function requestState(db: Db, requestId: string): Promise<RequestState | undefined> {
  return one<RequestState & Record<string, unknown>>(
    db,
    `SELECT r.connection_id AS "connectionId", c.connection_id AS "currentConnectionId", r.chunks,
            (SELECT count(*) FROM live_request_chunks p WHERE p.request_id = r.request_id AND p.connection_id = r.connection_id)::int AS received
       FROM live_requests r
       LEFT JOIN agent_connections c ON c.device_id = r.device_id
      WHERE r.request_id = :requestId::uuid`,
    { requestId },
  );
}

/** Hands a query over to the device's new connection: what the old one sends (or sent) of an answer no longer counts. */
export async function moveRequest(db: Db, requestId: string, from: string, to: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE live_requests SET connection_id = :to::text, chunks = NULL
      WHERE request_id = :requestId::uuid AND connection_id = :from::text`,
    { requestId, from, to },
  );
  return rowCount > 0;
}

/**
 * The Data API returns at most 64 KB per row and 1 MiB per call: the pieces (up to 128 KB each) are read in
 * slices of 8,000 characters (at most 32 KB of UTF-8), 24 slices a call.
 */
const sliceChars = 8_000;
const slicesPerRead = 24;

/** The answer's text: the pieces its connection sent, concatenated in order. */
export async function selectAnswer(db: Db, requestId: string, connectionId: string): Promise<string> {
  let text = '';
  let after = { chunk: -1, at: 0 };
  for (;;) {
    const { rows } = await db.query<{ chunk: number; at: number; part: string }>(
      `SELECT p.chunk, s.at, substr(p.data, s.at, ${sliceChars}) AS part
         FROM live_request_chunks p
        CROSS JOIN LATERAL generate_series(1, greatest(length(p.data), 1), ${sliceChars}) AS s (at)
        WHERE p.request_id = :requestId::uuid AND p.connection_id = :connectionId::text
          AND (p.chunk, s.at) > (:afterChunk::int, :afterAt::int)
        ORDER BY p.chunk, s.at
        LIMIT ${slicesPerRead}`,
      { requestId, connectionId, afterChunk: after.chunk, afterAt: after.at },
    );
    for (const row of rows) text += row.part;
    if (rows.length < slicesPerRead) return text;
    const last = rows[rows.length - 1]!;
    after = { chunk: last.chunk, at: last.at };
  }
}

/**
 * Whether a device whose connection closed at `closedAt` is still silent: no live connection, not seen since, and not
 * deleted.
 */
export async function selectSilentSince(db: Db, deviceId: string, closedAt: string): Promise<boolean> {
  const row = await one<{ silent: boolean }>(
    db,
    `SELECT (d.last_seen_at IS NULL OR d.last_seen_at < :closedAt::timestamptz + interval '1 millisecond')
            AND NOT EXISTS (SELECT 1 FROM agent_connections c WHERE c.device_id = d.id) AS silent
       FROM devices d WHERE d.id = :deviceId::uuid AND d.deleted_at IS NULL`,
    { deviceId, closedAt },
  );
  return row?.silent ?? false;
}
