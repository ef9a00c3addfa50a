import { auditDetailsJoin, auditRowColumns } from '#shared/audit/row.ts';
import { createPgDb } from '#shared/db/pg.ts';
const db = createPgDb({ connectionString: 'postgres://postgres@127.0.0.1:5432/exp1m', max: 1 });
const orgId = '0a000000-0000-4000-8000-000000000001';
const variants: Record<string, string> = {
  range: `SELECT e.*, l.seq, l.checksum, l.prev_checksum FROM (SELECT l.* FROM audit_chain_links l WHERE l.org_id = :orgId::uuid AND l.seq > :afterSeq::bigint ORDER BY l.seq LIMIT :rows::int) l
     JOIN audit_entries e ON e.org_id = l.org_id AND e.pos = l.pos
    WHERE e.org_id = :orgId::uuid AND e.pos >= (SELECT m.pos FROM audit_chain_links m WHERE m.org_id = :orgId::uuid AND m.seq > :afterSeq::bigint ORDER BY m.seq LIMIT 1) - 100000
      AND e.pos <= (SELECT m.pos FROM audit_chain_links m WHERE m.org_id = :orgId::uuid AND m.seq > :afterSeq::bigint ORDER BY m.seq LIMIT 1) + 100000`,
  old: `SELECT a.* FROM old_logs a WHERE a.org_id = :orgId::uuid AND a.seq > :afterSeq::bigint ORDER BY a.seq LIMIT :rows::int`,
  view: `SELECT a.* FROM audit_logs a WHERE a.org_id = :orgId::uuid AND a.seq > :afterSeq::bigint ORDER BY a.seq LIMIT :rows::int`,
  page: `WITH page AS MATERIALIZED (SELECT l.* FROM audit_chain_links l WHERE l.org_id = :orgId::uuid AND l.seq > :afterSeq::bigint ORDER BY l.seq LIMIT :rows::int)
  SELECT e.*, p.seq, p.checksum, p.prev_checksum FROM page p JOIN audit_entries e ON e.org_id = p.org_id AND e.pos = p.pos
   WHERE e.org_id = :orgId::uuid AND e.pos BETWEEN (SELECT min(q.pos) FROM page q) AND (SELECT max(q.pos) FROM page q)`,
};
const totals: Record<string, number> = {};
for (let round = 0; round < 3; round++)
  for (const [name, src] of Object.entries(variants)) {
    const sql = `SELECT ${auditRowColumns} FROM (${src}) a ${auditDetailsJoin} ORDER BY a.seq`;
    if (name === 'page') await db.query('SET enable_nestloop = off');
    const t = performance.now();
    for (let i = 0; i < 40; i++) await db.query(sql, { orgId, afterSeq: round * 200000 + i * 5000, rows: 5000 });
    totals[name] = (totals[name] ?? 0) + performance.now() - t;
    await db.query('SET enable_nestloop = on');
  }
for (const [name, ms] of Object.entries(totals)) console.log(name, (ms / 120).toFixed(1), 'ms per 5,000-row page');
await db.close();
