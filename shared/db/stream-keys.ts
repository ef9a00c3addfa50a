/**
 * The ordering keys of streamed logs (docs/audit-streaming.md "Streams"): the insert marks the rows of an
 * organization a destination streams the log to as waiting for their key, and the delivery job numbers them later
 * (shared/audit-streams/store.ts `numberLogRows`). A CTE `keys` that answers one row when the organization has a
 * head of the stream, none otherwise: `keys.base`, minus a ticket of the sequence log_stream_order times 2^20; the
 * insert sets its n-th row's `stream_seq` to `keys.base - n` (n from 1), joined `LEFT JOIN keys ON true`, so the
 * rows waiting sort in the order they were stored (`stream_seq DESC`). A plain read of the head and a sequence: the
 * insert takes no row lock, so concurrent inserts of one organization never wait for each other. Without a head the
 * rows get no key (NULL) and are never streamed. Expects the parameter `:orgId`; a statement stores fewer than 2^20
 * rows.
 */
export const streamKeysSql = (source: 'device-events' | 'agent-logs') => `keys AS (
       SELECT -nextval('log_stream_order') * 1048576 AS base FROM log_stream_heads
        WHERE org_id = :orgId::uuid AND source = '${source}'
     )`;
