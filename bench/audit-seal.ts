/**
 * `npm run bench:audit-seal [-- --seconds 3 --rounds 3]`: what the seal costs the writes, before and after each
 * entry's canonical values are turned into text once (0140_audit_seal_texts_once.sql).
 *
 * Three copies of the trail's tables in schemas of their own, each with the entry table's columns, identity and
 * indexes: one sealed by today's seal, one by the seal of 0105_audit_search_document.sql (the one before), both with
 * their own links, heads and counts per action, and one unsealed. The writers' sessions put a copy's schema first on
 * the search_path, so the very INSERT of insertAuditRows writes there. Workloads: 100-row batches from one writer,
 * 100-row batches from 8 writers each for one of 16 organizations in turn, and 10,000-row statements of history
 * rows; the copies' rounds interleaved. Runs on a scratch database (DATABASE_URL's server, or an embedded one).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AuditRowInput, insertAuditRows } from '#shared/audit/store.ts';
import type { Db } from '#shared/db/db.ts';
import { migrationsDir } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { benchReport, loadAverage, number, positive, ratio, status, statusDone, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';

const { values: args } = parseArgs({
  options: { seconds: { type: 'string', default: '3' }, rounds: { type: 'string', default: '3' } },
});
const seconds = positive('seconds', args.seconds);
const rounds = positive('rounds', args.rounds);

const actorIds = Array.from({ length: 50 }, () => randomUUID());
const resourceIds = Array.from({ length: 2_000 }, () => randomUUID());
const actions = ['user.login', 'script.execute', 'policy.update', 'alert.acknowledge', 'user.logout'];

/** An entry of another system's history, as the ingestion path stores it (explicit time, what reported it). */
function historyRow(orgId: string, n: number): AuditRowInput {
  return {
    orgId,
    timestamp: new Date(Date.UTC(2024, 0, 1) + n * 60_000).toISOString(),
    actorType: 'user',
    actorId: actorIds[n % actorIds.length]!,
    actorEmail: `tech${n % actorIds.length}@contoso.example`,
    action: actions[n % actions.length]!,
    resourceType: 'device',
    resourceId: resourceIds[n % resourceIds.length]!,
    resourceName: `WS-${String(n % resourceIds.length).padStart(5, '0')}`,
    details: {
      importedFrom: 'previous RMM',
      originalId: `evt-${n}`,
      actor: { name: `Technician ${n % 50}` },
      reportedBy: { actorType: 'user', id: actorIds[0] },
      reportedAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    },
    ipAddress: `10.0.${n % 256}.${n % 250}`,
    userAgent: 'LegacyRMM/9.4 (import)',
    result: 'success',
    errorMessage: null,
  };
}

/** The seal's function as a migration defines it (its last CREATE OR REPLACE there), to stand in a copy's schema. */
function sealOf(migration: string): string {
  const text = readFileSync(join(migrationsDir, migration), 'utf8');
  const start = text.lastIndexOf('CREATE OR REPLACE FUNCTION audit_entries_seal()');
  if (start < 0) throw new Error(`${migration} does not define the seal`);
  return text.slice(start, text.indexOf('$$;', start) + 3);
}

const chainTables = ['audit_chain_links', 'audit_chain_heads', 'audit_action_counts'];

/**
 * A copy of the entry table in `schema` (its identity its own), sealed by `seal` into copies of the links, heads and
 * counts there (none: unsealed); a writer whose sessions find that schema first.
 */
async function copy(admin: Db, url: string, schema: string, seal: string | null): Promise<Db> {
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.query(`CREATE TABLE ${schema}.audit_entries (LIKE public.audit_entries INCLUDING ALL)`);
  if (seal) {
    for (const table of chainTables)
      await admin.query(`CREATE TABLE ${schema}.${table} (LIKE public.${table} INCLUDING ALL)`);
    const { rows } = await admin.query<{ sequence: string }>(
      `SELECT pg_get_serial_sequence('${schema}.audit_entries', 'pos') AS sequence`,
    );
    let body = seal
      .replace('FUNCTION audit_entries_seal()', `FUNCTION ${schema}.audit_entries_seal()`)
      .replaceAll('public.audit_entries_pos_seq', rows[0]!.sequence);
    for (const table of chainTables) body = body.replaceAll(`public.${table}`, `${schema}.${table}`);
    await admin.query(body);
    await admin.query(`CREATE TRIGGER audit_entries_seal AFTER INSERT ON ${schema}.audit_entries
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.audit_entries_seal()`);
  }
  const writerUrl = new URL(url);
  writerUrl.searchParams.set('options', `-c TimeZone=UTC -c search_path=${schema},public`);
  return createPgDb({ connectionString: writerUrl.toString(), max: 8, applicationName: `logbook-bench-${schema}` });
}

interface Workload {
  name: string;
  writers: number;
  batch: number;
  /** Each writer's call `call` is for one organization of 16: the first, or each in turn. */
  rotate: boolean;
}

const workloads: Workload[] = [
  { name: '100-row batches, 1 writer, one organization', writers: 1, batch: 100, rotate: false },
  { name: '100-row batches, 8 writers, each one of 16 organizations', writers: 8, batch: 100, rotate: true },
  { name: 'history, 10,000-row statements, one organization', writers: 1, batch: 10_000, rotate: false },
];

/** Rows written in `seconds` seconds by the workload's writers (and the seconds spent). */
async function run(db: Db, w: Workload): Promise<{ rows: number; seconds: number }> {
  const orgs = Array.from({ length: 16 }, () => randomUUID()).sort();
  let rows = 0;
  let calls = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: w.writers }, async () => {
      while (performance.now() < deadline) {
        const call = calls++;
        const org = w.rotate ? orgs[call % orgs.length]! : orgs[0]!;
        await insertAuditRows(
          db,
          Array.from({ length: w.batch }, (_, i) => historyRow(org, rows + i)),
        );
        rows += w.batch;
      }
    }),
  );
  return { rows, seconds: (performance.now() - started) / 1000 };
}

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('audit_seal');
  const admin = createPgDb({ connectionString: scratch.url, max: 1, applicationName: 'logbook-bench' });
  const copies = {
    now: await copy(admin, scratch.url, 'bench_seal_now', sealOf('0140_audit_seal_texts_once.sql')),
    before: await copy(admin, scratch.url, 'bench_seal_before', sealOf('0105_audit_search_document.sql')),
    unsealed: await copy(admin, scratch.url, 'bench_unsealed', null),
  };
  const lines: string[][] = [];
  try {
    for (const w of workloads) {
      const total = {
        now: { rows: 0, seconds: 0 },
        before: { rows: 0, seconds: 0 },
        unsealed: { rows: 0, seconds: 0 },
      };
      for (let round = 0; round < rounds; round++) {
        for (const which of ['before', 'now', 'unsealed'] as const) {
          status(`${w.name}: round ${round + 1} of ${rounds}, ${which}`);
          const measured = await run(copies[which], w);
          total[which].rows += measured.rows;
          total[which].seconds += measured.seconds;
        }
      }
      const rate = (which: keyof typeof total) => total[which].rows / total[which].seconds;
      const share = (which: 'now' | 'before') => rate(which) / rate('unsealed');
      const percent = (which: 'now' | 'before') => `${Math.round(share(which) * 100)}%`;
      lines.push(
        [`${w.name} (unsealed copy ${number(rate('unsealed'))} rows/s, load ${loadAverage()})`],
        [
          '',
          `sealed: ${number(rate('now'))} rows/s, ${percent('now')} of the copy`,
          `the seal before: ${number(rate('before'))} rows/s, ${percent('before')}`,
          ratio(rate('now') / rate('before')),
          '>= 85% of the copy',
          verdict(share('now') >= 0.85),
        ],
      );
    }
  } finally {
    statusDone();
    await Promise.all(Object.values(copies).map((db) => db.close()));
    await admin.close();
    await scratch.drop();
  }
  console.log(benchReport({ name: 'audit seal', server: scratch.server, loadAtStart, started, lines }));
}

main().catch((error: unknown) => {
  console.error('bench:audit-seal failed:', error);
  process.exit(1);
});
