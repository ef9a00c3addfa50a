/**
 * Flood protection: an entry stamped more than 10 minutes ahead of the server clock is stored
 * at the time it is received, with the submitted text kept as `originalTimestamp` in its JSON column
 * (agent_logs.fields, device_event_logs.details), so a device with a wrong clock cannot pin its entries
 * to the top of every newest-first list. SQL over a jsonb_to_recordset row `r` holding "timestamp" (as
 * submitted) and "at" (the same instant as UTC text, shared/instants.ts asUtc).
 */
const ahead = `r.at::timestamptz > now() + interval '10 minutes'`;

export const clampedTimestampSql = `CASE WHEN ${ahead} THEN now() ELSE r.at::timestamptz END`;

/** The JSON column's value (null reads as {}), with originalTimestamp added when the timestamp was clamped. */
export const jsonWithOriginalTimestampSql = (column: string) =>
  `CASE WHEN ${ahead} THEN COALESCE(${column}, '{}') || jsonb_build_object('originalTimestamp', r."timestamp") ELSE COALESCE(${column}, '{}') END`;
