/**
 * The ordering keys of streamed logs (migration 0106, docs/audit-streaming.md "Streams"): a CTE `keys` that moves the
 * organization's head of the stream on by `:count` rows and answers the key before them (`keys.base`); the insert
 * numbers its rows `keys.base + n` (n from 1). The head row stays taken until the transaction ends, so the keys of an
 * organization become visible in their order. Expects the parameters `:orgId` and `:count`.
 */
export const streamKeysSql = (source: 'device-events' | 'agent-logs') => `keys AS (
       INSERT INTO log_stream_heads AS h (org_id, source, seq) VALUES (:orgId::uuid, '${source}', :count::bigint)
       ON CONFLICT (org_id, source) DO UPDATE SET seq = h.seq + excluded.seq
       RETURNING h.seq - :count::bigint AS base
     )`;
