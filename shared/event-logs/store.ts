import { clampedTimestampSql, jsonWithOriginalTimestampSql } from '../agents/clock-skew.ts';
import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import { streamKeysSql } from '../db/stream-keys.ts';
import { asUtc } from '../instants.ts';
import type { DeviceEvent, EventCategory, EventLevel } from './schemas.ts';

/**
 * One batch as one multi-row INSERT, the events as one JSON parameter. An event whose
 * (device, source, eventId) is already stored, by an earlier submission or an earlier batch or row of
 * this one, is skipped by the unique index. Returns the rows actually inserted.
 */
/** What one insert stored: how many events, and the first and last of their timestamps (as stored). */
export interface StoredEvents {
  inserted: number;
  first: Date | null;
  last: Date | null;
}

export async function insertEventBatch(
  db: Db,
  device: { id: string; orgId: string },
  events: readonly DeviceEvent[],
): Promise<StoredEvents> {
  const rows = events.map((e, n) => ({
    n: n + 1,
    timestamp: e.timestamp,
    at: asUtc(e.timestamp),
    level: e.level,
    category: e.category,
    source: e.source,
    eventId: e.eventId ?? null,
    message: e.message,
    details: e.details ?? {},
  }));
  const stored = await one<{ inserted: number; first: Date | null; last: Date | null }>(
    db,
    `WITH ${streamKeysSql('device-events')},
     stored AS (
       INSERT INTO device_event_logs (device_id, org_id, timestamp, level, category, source, event_id, message, details, stream_seq)
       SELECT :deviceId::uuid, :orgId::uuid, ${clampedTimestampSql}, r.level::event_log_level, r.category::event_log_category,
              r.source, r."eventId", r.message, ${jsonWithOriginalTimestampSql('r.details')}, keys.base - r.n
         FROM jsonb_to_recordset(:rows::jsonb)
           AS r(n int, "timestamp" text, at text, level text, category text, source text, "eventId" text, message text, details jsonb)
         LEFT JOIN keys ON true
       ON CONFLICT (device_id, source, event_id) DO NOTHING
       RETURNING timestamp
     )
     SELECT count(*)::int AS inserted, min(timestamp) AS first, max(timestamp) AS last FROM stored`,
    { deviceId: device.id, orgId: device.orgId, rows },
  );
  return {
    inserted: stored?.inserted ?? 0,
    first: stored?.first ? new Date(stored.first) : null,
    last: stored?.last ? new Date(stored.last) : null,
  };
}

export interface EventLogFilter {
  category?: string[];
  level?: string[];
  source?: string;
  startDate?: string;
  endDate?: string;
}

type DeviceEventLogRow = {
  id: string;
  deviceId: string;
  orgId: string;
  timestamp: Date;
  level: EventLevel;
  category: EventCategory;
  source: string;
  eventId: string | null;
  message: string;
  details: Record<string, unknown>;
  createdAt: Date;
};

const columns = `e.id, e.device_id AS "deviceId", e.org_id AS "orgId", e.timestamp, e.level, e.category, e.source, e.event_id AS "eventId",
  e.message, e.details, e.created_at AS "createdAt"`;

/** A page of the device's events, newest first, and the total under the filters. */
export function selectEventLogs(db: Db, deviceId: string, filter: EventLogFilter, page: Page) {
  return selectPage<DeviceEventLogRow>(
    db,
    columns,
    `device_event_logs e
      WHERE e.device_id = :deviceId::uuid
        AND (:categories::text IS NULL OR e.category = ANY (string_to_array(:categories::text, ',')::event_log_category[]))
        AND (:levels::text IS NULL OR e.level = ANY (string_to_array(:levels::text, ',')::event_log_level[]))
        AND (:source::text IS NULL OR e.source = :source::text)
        AND e.timestamp >= :startDate::timestamptz AND e.timestamp <= :endDate::timestamptz`,
    'e.timestamp DESC, e.id DESC',
    {
      deviceId,
      categories: filter.category?.join(',') ?? null,
      levels: filter.level?.join(',') ?? null,
      source: filter.source ?? null,
      startDate: filter.startDate ?? '-infinity',
      endDate: filter.endDate ?? 'infinity',
    },
    page,
  );
}
