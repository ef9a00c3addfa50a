/**
 * The ordering keys of streamed logs (migration 0106, docs/audit-streaming.md "Streams"): a CTE `keys` that moves the
 * organization's head of the stream on by `:count` rows and answers the key before them (`keys.base`); the insert
 * numbers its rows `keys.base + n` (n from 1), joined `LEFT JOIN keys ON true`. The head row stays taken until the
 * transaction ends, so the keys of an organization become visible in their order. An organization has a head only
 * while a destination streams it: without one the UPDATE finds nothing, takes no lock, and the rows get no key.
 * Expects the parameters `:orgId` and `:count`.
 */
export const streamKeysSql = (source: 'device-events' | 'agent-logs') => `keys AS (
       UPDATE log_stream_heads SET seq = seq + :count::bigint
        WHERE org_id = :orgId::uuid AND source = '${source}'
       RETURNING seq - :count::bigint AS base
     )`;
