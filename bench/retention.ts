/**
 * `tsx bench/retention.ts [--rows 1000000 --batch 5000]` (also run by `npm run bench`): the retention figure.
 * One organization holds --rows expired audit rows (and a day of recent ones); the worker
 * (runRetention, as logbook_audit_admin) prunes them batch by batch, and its rate is printed beside a baseline
 * measured in the same run: the same rows deleted from an unsealed copy of the table (same columns and indexes, no
 * trigger) in the same batches, by a bare DELETE of a seq range.
 *
 * Runs on a scratch database (on DATABASE_URL's server, or an embedded PostgreSQL it starts) and drops it.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { generateAnchorKey } from '#shared/audit/anchor-signing.ts';
import { defaultBatchRows } from '#shared/audit/prune.ts';
import { runRetention } from '#shared/audit/retention.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { loadAverage, number, positive, status, statusDone } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    batch: { type: 'string', default: String(defaultBatchRows) },
  },
  strict: true,
});
const expiredRows = positive('rows', args.rows);
const batchRows = positive('batch', args.batch);
const recentRows = 1_000;
const loadStatementRows = 100_000;
// Target: 1,000,000 expired rows pruned; 10,000 rows/s fits about 8 million rows into one 15-minute Lambda run.
const targetRowsPerSecond = 10_000;

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('retention');
  const admin = createPgDb({ connectionString: scratch.url, max: 1, applicationName: 'logbook-bench' });
  // Role logins are cluster-wide: the same local password every local server and test run gives it.
  await grantRoleLogins(admin, { auditAdmin: localRolePasswords.auditAdmin });
  const worker = createPgDb({
    connectionString: roleUrls(scratch.url).auditAdmin,
    max: 1,
    applicationName: 'logbook-bench-retention',
  });
  try {
    const { rows } = await admin.query<{ version: string; fsync: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync`,
    );
    const server = rows[0]!;
    const partner = await insertPartner(admin, 'Bench MSP');
    const org = await admin.transaction((tx) =>
      insertOrganizationWithSite(tx, { partnerId: String(partner!.id), name: 'Bench Ltd' }, { name: 'Main' }),
    );
    await admin.query('UPDATE audit_retention_policies SET retention_days = 30 WHERE org_id = :orgId::uuid', {
      orgId: org.id,
    });

    const loadStarted = performance.now();
    const load = (count: number, age: string) =>
      admin.query(
        `INSERT INTO audit_entries (org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type, resource_id, resource_name, details, ip_address)
         SELECT :orgId::uuid, now() - :age::interval + g * interval '1 second', 'user', gen_random_uuid(), 'tech@contoso.example', 'device.update',
                'device', gen_random_uuid(), 'WS-' || g, jsonb_build_object('before', jsonb_build_object('displayName', 'old'), 'after', jsonb_build_object('displayName', 'new ' || g)), '203.0.113.7'
           FROM generate_series(1, :count::int) g`,
        { orgId: org.id, count, age },
      );
    for (let done = 0; done < expiredRows; done += loadStatementRows) {
      status(`loading ${number(done)} / ${number(expiredRows)} expired rows through the sealing trigger ...`);
      await load(Math.min(loadStatementRows, expiredRows - done), '400 days');
    }
    await load(recentRows, '1 day');
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    // The baseline: the entries' table with its indexes, the link's columns in the same row, no trigger.
    await admin.query(`CREATE TABLE audit_logs_unsealed (LIKE audit_entries INCLUDING ALL,
      seq bigint NOT NULL, checksum varchar(128) NOT NULL, prev_checksum varchar(128), UNIQUE (org_id, seq))`);
    await admin.query(`INSERT INTO audit_logs_unsealed OVERRIDING SYSTEM VALUE
      SELECT e.*, l.seq, l.checksum, l.prev_checksum FROM audit_entries e JOIN audit_chain_links l ON l.pos = e.pos`);
    await admin.query('VACUUM ANALYZE audit_entries, audit_chain_links');
    await admin.query('VACUUM ANALYZE audit_logs_unsealed');

    status('pruning with the retention worker ...');
    const pruneStarted = performance.now();
    // The cut is signed (as the deployed worker signs it); the daily integrity watch is measured by bench:audit.
    const run = await runRetention(worker, {
      batchRows,
      anchorKey: generateAnchorKey(),
      integrityWatch: false,
      onProgress: ({ rowsDeleted }) =>
        void (process.stderr.isTTY && status(`pruning with the retention worker: ${number(rowsDeleted)} rows ...`)),
    });
    const pruneSeconds = (performance.now() - pruneStarted) / 1000;
    const verified = await verifyChain(admin, org.id);
    if (run.rowsDeleted !== expiredRows || run.failed > 0 || !verified.ok || verified.checked !== recentRows + 1) {
      throw new Error(
        `the worker went wrong: ${JSON.stringify({ rowsDeleted: run.rowsDeleted, failed: run.failed, verified })}`,
      );
    }

    status('pruning the unsealed copy with bare DELETEs ...');
    const bareStarted = performance.now();
    for (let after = 0; after < expiredRows; after += batchRows) {
      await admin.transaction((tx) =>
        tx.query(
          'DELETE FROM audit_logs_unsealed WHERE org_id = :orgId::uuid AND seq > :after::bigint AND seq <= :through::bigint',
          {
            orgId: org.id,
            after,
            through: Math.min(after + batchRows, expiredRows),
          },
        ),
      );
    }
    const bareSeconds = (performance.now() - bareStarted) / 1000;
    statusDone();

    const rate = expiredRows / pruneSeconds;
    console.log(`
Logbook retention benchmark (${new Date().toISOString().slice(0, 16)}Z): PostgreSQL ${server.version} on ${scratch.server}, fsync ${server.fsync};
${availableParallelism()} CPUs shared by the server and this client, load average ${loadAtStart} at the start and ${loadAverage()} at the end.

${formatTable(
  ['', 'figure', 'baseline (same run)', 'ratio', 'target', ''],
  [
    [
      `  prune ${number(expiredRows)} expired rows of one organization, ${number(batchRows)} per transaction`,
      `${pruneSeconds.toFixed(1)} s (${number(rate)} rows/s)`,
      `${bareSeconds.toFixed(1)} s bare DELETE, no trigger`,
      `${(pruneSeconds / bareSeconds).toFixed(1)}x`,
      `>= ${number(targetRowsPerSecond)} rows/s`,
      rate >= targetRowsPerSecond ? 'PASS' : 'MISS',
    ],
    [
      `  (the ${number(recentRows)} recent rows kept and the chain verified after the cut; load: ${number(expiredRows + recentRows)} rows sealed in ${loadSeconds.toFixed(0)} s)`,
    ],
  ],
)}

Done in ${((performance.now() - started) / 1000 / 60).toFixed(1)} min.`);
  } finally {
    statusDone();
    await worker.close();
    await admin.close();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error('bench retention failed:', error);
  process.exit(1);
});
