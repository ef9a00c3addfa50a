import { type Db, one } from '../db/db.ts';

/** The device an agent acts for. */
export interface AgentDevice {
  agentId: string;
  /** The device id. */
  id: string;
  orgId: string;
}

/** Whether a live agent of a live device has this id. */
export async function agentExists(db: Db, agentId: string): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 AS found
       FROM agents a
       JOIN devices d ON d.id = a.device_id
       JOIN organizations o ON o.id = d.org_id
      WHERE a.id = :agentId::uuid AND a.revoked_at IS NULL AND d.deleted_at IS NULL AND o.deleted_at IS NULL`,
    { agentId },
  );
  return row !== undefined;
}

/** How the device is named in audit rows (shared/hierarchy/devices.ts deviceResource). */
export function selectDeviceNames(db: Db, deviceId: string) {
  return one<{ hostname: string; displayName: string | null }>(
    db,
    'SELECT hostname, display_name AS "displayName" FROM devices WHERE id = :deviceId::uuid',
    {
      deviceId,
    },
  );
}

/**
 * Records a heartbeat and returns the source IP the device had before it. The previous row is read
 * FOR UPDATE in the same statement, so of two concurrent heartbeats the second waits for the first
 * and compares against the IP the first wrote: an IP change is reported exactly once.
 */
export function recordHeartbeat(db: Db, deviceId: string, report: HeartbeatReport & { ip: string | null }) {
  return one<{
    previousIp: string | null;
    previousSeenAt: Date | null;
    /** Whether the device had a live WebSocket connection: it was online all along, whatever previousSeenAt says. */
    connected: boolean;
    ip: string | null;
    lastSeenAt: Date;
    hostname: string;
    displayName: string | null;
  }>(
    db,
    `WITH previous AS (
       SELECT id, last_ip, last_seen_at FROM devices WHERE id = :deviceId::uuid AND deleted_at IS NULL FOR UPDATE
     )
     UPDATE devices d SET
        last_seen_at = now(),
        -- A new address is kept by moveDeviceIp, in the transaction that audits the change.
        last_ip = CASE WHEN p.last_ip IS NULL THEN COALESCE(:ip::text, d.last_ip) ELSE d.last_ip END,
        agent_version = COALESCE(:agentVersion::text, d.agent_version),
        agent_status = COALESCE(:status::text, d.agent_status),
        serial_number = COALESCE(:serialNumber::text, d.serial_number),
        role = COALESCE(:role::text, d.role),
        reboot_pending = COALESCE(:rebootPending::boolean, d.reboot_pending),
        last_boot_at = COALESCE(:lastBootAt::timestamptz, d.last_boot_at),
        os_updater_suppressed = COALESCE(:osUpdaterSuppressed::boolean, d.os_updater_suppressed)
       FROM previous p
      WHERE d.id = p.id
      RETURNING p.last_ip AS "previousIp", p.last_seen_at AS "previousSeenAt",
                EXISTS (SELECT 1 FROM agent_connections c WHERE c.device_id = d.id) AS connected, d.last_ip AS ip, d.last_seen_at AS "lastSeenAt", d.hostname, d.display_name AS "displayName"`,
    { deviceId, ...report },
  );
}

/** A heartbeat's report, as recordHeartbeat stores it. */
export interface HeartbeatReport {
  agentVersion: string | null;
  status: string | null;
  serialNumber: string | null;
  role: string | null;
  rebootPending: boolean | null;
  lastBootAt: string | null;
  osUpdaterSuppressed: boolean | null;
}

/** A heartbeat recorded from a connection: the agent speaking on it and what recordHeartbeat answers. */
export interface ConnectionHeartbeatRow {
  connectionId: string;
  agentId: string;
  deviceId: string;
  orgId: string;
  /** The connection's source IP, as its $connect saw it. */
  sourceIp: string | null;
  previousIp: string | null;
  previousSeenAt: Date | null;
  ip: string | null;
  lastSeenAt: Date;
  hostname: string;
  displayName: string | null;
}

/**
 * recordHeartbeat for heartbeats carried by agents' WebSocket connections, many devices in one statement (a batch of
 * the heartbeat queue): each connection names its agent and device as its $connect authenticated them, and its source
 * IP is the heartbeat's, and the device was seen when the heartbeat arrived (a batch that runs late moves nothing
 * forward beyond it). One heartbeat per connection (the caller merges a connection's). The devices' rows are
 * locked in id order and read before the update, as recordHeartbeat does for one; a connection that is gone, or whose
 * agent was revoked or device deleted, has no row in the answer.
 */
export async function recordConnectionHeartbeats(
  db: Db,
  beats: readonly (HeartbeatReport & { connectionId: string; receivedAt: string })[],
): Promise<ConnectionHeartbeatRow[]> {
  if (beats.length === 0) return [];
  const { rows } = await db.query<ConnectionHeartbeatRow & Record<string, unknown>>(
    `WITH beat AS (
       SELECT * FROM jsonb_to_recordset(:beats::jsonb) AS b(
         "connectionId" text, "agentVersion" text, status text, "serialNumber" text, role text,
         "rebootPending" boolean, "lastBootAt" timestamptz, "osUpdaterSuppressed" boolean, "receivedAt" timestamptz)
     ), speaker AS (
       SELECT b.*, c.agent_id, c.device_id, c.org_id, c.source_ip
         FROM beat b
         JOIN agent_connections c ON c.connection_id = b."connectionId"
         JOIN agents a ON a.id = c.agent_id
         JOIN devices dv ON dv.id = c.device_id
         JOIN organizations o ON o.id = dv.org_id
        WHERE a.revoked_at IS NULL AND dv.deleted_at IS NULL AND o.deleted_at IS NULL
     ), previous AS (
       SELECT id, last_ip, last_seen_at FROM devices
        WHERE id IN (SELECT device_id FROM speaker) AND deleted_at IS NULL
        ORDER BY id FOR UPDATE
     )
     UPDATE devices d SET
        -- Seen when the heartbeat arrived, never later than now nor earlier than already seen.
        last_seen_at = GREATEST(d.last_seen_at, LEAST(now(), s."receivedAt")),
        -- A new address is kept by moveDeviceIp, in the transaction that audits the change.
        last_ip = CASE WHEN p.last_ip IS NULL THEN COALESCE(s.source_ip, d.last_ip) ELSE d.last_ip END,
        agent_version = COALESCE(s."agentVersion", d.agent_version),
        agent_status = COALESCE(s.status, d.agent_status),
        serial_number = COALESCE(s."serialNumber", d.serial_number),
        role = COALESCE(s.role, d.role),
        reboot_pending = COALESCE(s."rebootPending", d.reboot_pending),
        last_boot_at = COALESCE(s."lastBootAt", d.last_boot_at),
        os_updater_suppressed = COALESCE(s."osUpdaterSuppressed", d.os_updater_suppressed)
       FROM previous p JOIN speaker s ON s.device_id = p.id
      WHERE d.id = p.id
      RETURNING s."connectionId", s.agent_id AS "agentId", s.device_id AS "deviceId", s.org_id AS "orgId",
                s.source_ip AS "sourceIp", p.last_ip AS "previousIp", p.last_seen_at AS "previousSeenAt",
                d.last_ip AS ip, d.last_seen_at AS "lastSeenAt", d.hostname, d.display_name AS "displayName"`,
    { beats: beats as unknown as Record<string, unknown>[] },
  );
  return rows;
}

/** Moves a device's last IP from `from` to `to`; false when another heartbeat moved it first. */
export async function moveDeviceIp(tx: Db, deviceId: string, from: string, to: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    'UPDATE devices SET last_ip = :to::text WHERE id = :deviceId::uuid AND last_ip = :from::text',
    { deviceId, from, to },
  );
  return rowCount > 0;
}

export type IngestKind = 'logs' | 'events' | 'fields';

export interface Reservation {
  /** The clock hour the entries were charged to; null when the budget refused them. */
  windowStart: Date | null;
  budget: number;
  /** Seconds until the current window ends. */
  retryAfterSeconds: number;
}

/**
 * The charge of `count` entries to the device's budget of the current clock hour if `needed` more fit (`needed` is
 * `count` but for a check that charges nothing), as the CTEs `budget` (the organization's override or
 * :defaultBudget, and the hour) and `reserved` (the hour charged; no row when refused), the charge made only where
 * `gate` holds (an SQL condition over earlier CTEs of the statement). A row of an earlier hour is reset in place. The
 * device's row stays locked until commit, so concurrent charges queue on it and cannot overdraw it. Parameters
 * :deviceId, :orgId, :kind, :count, :needed, :defaultBudget.
 */
export const ingestChargeSql = (gate = 'true') => `budget AS (
       SELECT COALESCE(
                (SELECT CASE :kind::text WHEN 'logs' THEN l.logs_per_device_hour WHEN 'events' THEN l.events_per_device_hour END
                   FROM agent_ingest_limits l WHERE l.org_id = :orgId::uuid),
                :defaultBudget::int) AS entries,
              date_trunc('hour', now()) AS window_start
     ), reserved AS (
       INSERT INTO agent_ingest_usage AS u (device_id, kind, window_start, used)
       SELECT :deviceId::uuid, :kind::text, b.window_start, :count::int FROM budget b WHERE :needed::int <= b.entries AND ${gate}
       ON CONFLICT (device_id, kind) DO UPDATE SET
          window_start = excluded.window_start,
          used = CASE WHEN u.window_start = excluded.window_start THEN u.used ELSE 0 END + excluded.used
        WHERE CASE WHEN u.window_start = excluded.window_start THEN u.used ELSE 0 END + :needed::int <= (SELECT entries FROM budget)
       RETURNING u.window_start
     )`;

/** The Reservation a statement with ingestChargeSql answers, over `budget b LEFT JOIN reserved r ON true`. */
export const reservationColumns = `r.window_start AS "windowStart", b.entries AS budget,
            ceil(extract(epoch FROM b.window_start + interval '1 hour' - now()))::int AS "retryAfterSeconds"`;

/** The parameters of ingestChargeSql. */
export type IngestCharge = {
  deviceId: string;
  orgId: string;
  kind: IngestKind;
  count: number;
  needed: number;
  defaultBudget: number;
};

/** Charges entries to the device's hourly budget in a statement of its own (ingestChargeSql). */
export async function upsertIngestUsage(db: Db, r: IngestCharge): Promise<Reservation> {
  const row = await one<Reservation & Record<string, unknown>>(
    db,
    `WITH ${ingestChargeSql()}
     SELECT ${reservationColumns} FROM budget b LEFT JOIN reserved r ON true`,
    r,
  );
  return row!;
}

/** Gives back entries a reservation charged but that were not stored (failed batches, duplicates). */
export async function decrementIngestUsage(
  db: Db,
  r: { deviceId: string; kind: IngestKind; windowStart: Date; count: number },
): Promise<void> {
  await db.query(
    `UPDATE agent_ingest_usage SET used = greatest(used - :count::int, 0)
      WHERE device_id = :deviceId::uuid AND kind = :kind::text AND window_start = :windowStart::timestamptz`,
    r,
  );
}

export type IngestLimitOverrides = {
  logsPerDeviceHour: number | null;
  eventsPerDeviceHour: number | null;
};

const limitColumns = `logs_per_device_hour AS "logsPerDeviceHour", events_per_device_hour AS "eventsPerDeviceHour"`;

/** The organization's overrides, locked until commit when `lock` is set. */
export function selectIngestLimits(db: Db, orgId: string, lock = false) {
  return one<IngestLimitOverrides & Record<string, unknown>>(
    db,
    `SELECT ${limitColumns} FROM agent_ingest_limits WHERE org_id = :orgId::uuid${lock ? ' FOR UPDATE' : ''}`,
    { orgId },
  );
}

/** Sets the overrides named in `change` (null: back to the default) and returns them all. */
export async function upsertIngestLimits(
  db: Db,
  orgId: string,
  change: Partial<IngestLimitOverrides>,
  updatedBy: string,
) {
  const row = await one<IngestLimitOverrides & Record<string, unknown>>(
    db,
    `INSERT INTO agent_ingest_limits AS l (org_id, logs_per_device_hour, events_per_device_hour, updated_by)
     VALUES (:orgId::uuid, :logs::int, :events::int, :updatedBy::uuid)
     ON CONFLICT (org_id) DO UPDATE SET
        logs_per_device_hour = CASE WHEN :setLogs::boolean THEN excluded.logs_per_device_hour ELSE l.logs_per_device_hour END,
        events_per_device_hour = CASE WHEN :setEvents::boolean THEN excluded.events_per_device_hour ELSE l.events_per_device_hour END,
        updated_at = now(),
        updated_by = excluded.updated_by
     RETURNING ${limitColumns}`,
    {
      orgId,
      updatedBy,
      logs: change.logsPerDeviceHour ?? null,
      events: change.eventsPerDeviceHour ?? null,
      setLogs: 'logsPerDeviceHour' in change,
      setEvents: 'eventsPerDeviceHour' in change,
    },
  );
  return row!;
}
