import { readChainPages, verifyChain } from '#shared/audit/verify.ts';
import { createPgDb } from '#shared/db/pg.ts';
const db = createPgDb({ connectionString: 'postgres://postgres@127.0.0.1:5432/exp1m', max: 2 });
const orgId = '0a000000-0000-4000-8000-000000000001';
for (let i = 0; i < 2; i++) {
  let t = performance.now();
  let n = 0;
  await db.transaction(async (tx) => {
    for await (const page of readChainPages(tx, orgId, { afterSeq: null, untilSeq: null })) n += page.length;
  }, { isolation: 'REPEATABLE READ' });
  console.log('read', n, ((performance.now() - t) / 1000).toFixed(2), 's');
  t = performance.now();
  const v = await verifyChain(db, orgId);
  console.log('verify', v.ok, v.checked, ((performance.now() - t) / 1000).toFixed(2), 's');
}
await db.close();
