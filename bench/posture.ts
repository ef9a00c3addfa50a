/**
 * `npm run bench:posture [-- --orgs 100 --devices 20000 --detections 20 --uploads 1000 --reconcile 10000 --samples 40]`:
 * the posture figures, each beside a baseline measured in the same run on the same server:
 *
 * - the management-posture report for a partner of --orgs organizations and --devices devices, each scanned device
 *   with --detections detections (5% never scanned), across the fleet and for one organization, against a bare
 *   GROUP BY of the same detections;
 * - --uploads posture snapshots at once (one per device, as many agents), against as many bare round trips at once;
 * - the reconciliation of a --reconcile device list with an organization of as many devices, against the bare read
 *   of the organization's devices.
 *
 * `--explain` prints the plans (EXPLAIN ANALYZE) of the report's statements, whole fleet and one organization.
 *
 * Runs the production use cases (shared/posture, shared/reconciliation) on a scratch database and drops it.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { AuditContext } from '#shared/audit/writer.ts';
import type { Db, Params, Row } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { postureCatalog } from '#shared/posture/catalog.ts';
import { postureReport } from '#shared/posture/report.ts';
import { uploadPosture } from '#shared/posture/snapshot.ts';
import { uploadReconciliation } from '#shared/reconciliation/reconcile.ts';
import { benchReport, loadAverage, ms, number, positive, ratio, status, verdict } from './support/format.ts';
import { insertBenchOrganizations } from './support/organizations.ts';
import { partnerAdmin } from './support/principals.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { serverSettings } from './support/server-settings.ts';
import { latency, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    orgs: { type: 'string', default: '100' },
    devices: { type: 'string', default: '20000' },
    detections: { type: 'string', default: '20' },
    uploads: { type: 'string', default: '1000' },
    reconcile: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '40' },
    explain: { type: 'boolean', default: false },
  },
  strict: true,
});
const orgCount = positive('orgs', args.orgs);
const deviceCount = positive('devices', args.devices);
const detectionCount = positive('detections', args.detections);
const uploadCount = positive('uploads', args.uploads);
const reconcileCount = positive('reconcile', args.reconcile);
const samples = positive('samples', args.samples);

// Targets.
const targets = { reportP95Ms: 150, reconcileS: 3 };

const jsonOnly = {
  maxBytes: Number.MAX_SAFE_INTEGER,
  tooLarge: () => new Error('too large'),
  deliver: (f: unknown) => f,
};

/** Devices spread over the organizations; 95% scanned, each with `detectionCount` detections of catalogue products. */
async function loadFleet(admin: Db, orgIds: string[]) {
  await admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, os_type)
     SELECT o.id, s.id, 'dev-' || lpad(i::text, 6, '0'), 'windows'
       FROM generate_series(1, :count::int) AS i
       JOIN LATERAL (SELECT id FROM organizations WHERE id = (:orgIds::jsonb ->> (i % :orgs::int))::uuid) o ON true
       JOIN LATERAL (SELECT id FROM sites WHERE org_id = o.id LIMIT 1) s ON true`,
    { count: deviceCount, orgIds, orgs: orgIds.length },
  );
  await admin.query(
    `INSERT INTO device_posture (device_id, org_id, collected_at)
     SELECT id, org_id, now() - make_interval(hours => (abs(hashtext(hostname)) % 256)) FROM devices
      WHERE abs(hashtext(hostname)) % 20 <> 0`,
  );
  const products = postureCatalog.map((p) => ({ category: p.category, name: p.name }));
  const pool = Array.from({ length: 40 }, (_, i) => ({
    category: products[i % products.length]!.category,
    product: `${products[i % products.length]!.name}${i < products.length ? '' : ` ${i}`}`,
  }));
  await admin.query(
    `INSERT INTO device_posture_detections (device_id, org_id, category, product, version, status, collected_at)
     SELECT p.device_id, p.org_id, x.category, x.product, '1.0', CASE WHEN (abs(hashtext(p.device_id::text)) + k) % 3 = 0 THEN 'installed' ELSE 'active' END,
            p.collected_at
       FROM device_posture p
       CROSS JOIN generate_series(0, :detections::int - 1) AS k
       JOIN LATERAL (SELECT * FROM jsonb_to_recordset(:pool::jsonb) AS r(category text, product text)
                      OFFSET ((abs(hashtext(p.device_id::text)) + k) % 40) LIMIT 1) x ON true`,
    { detections: detectionCount, pool },
  );
  // What uploads keep (shared/posture/store.ts), built in bulk as migration 0059 builds it from stored snapshots.
  await admin.query(
    `UPDATE device_posture p SET categories = ARRAY(
       SELECT DISTINCT x.category FROM device_posture_detections x WHERE x.device_id = p.device_id ORDER BY 1)`,
  );
  await admin.query('INSERT INTO posture_counts SELECT * FROM posture_recount()');
}

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('posture');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  const db = createPgDb({ connectionString: scratch.url, max: 20, applicationName: 'logbook-bench-posture' });
  try {
    const server = await serverSettings(admin, scratch.server);
    const { partnerId, orgIds } = await insertBenchOrganizations(admin, orgCount);
    status(`loading ${number(deviceCount)} devices with ${detectionCount} detections each ...`);
    await loadFleet(admin, orgIds);
    await admin.query('VACUUM ANALYZE');
    const { rows: loaded } = await admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM device_posture_detections',
    );
    const principal = partnerAdmin(partnerId);
    const lines: string[][] = [];

    if (args.explain) {
      // The report's statements run under EXPLAIN ANALYZE; their plans go to stderr.
      const explaining: Db = {
        ...db,
        query: async <T extends Row>(sql: string, params?: Params) => {
          if (!sql.includes('posture')) return db.query<T>(sql, params);
          const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
          status(plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
          return { rows: [], rowCount: 0 };
        },
      };
      for (const orgId of [undefined, orgIds[0]])
        await postureReport(explaining, principal, { orgId, staleDays: 7, format: 'json' }, jsonOnly).catch(() => {});
    }

    status('posture report ...');
    const fleet = await latency(
      () => postureReport(db, principal, { staleDays: 7, format: 'json' }, jsonOnly),
      samples,
    );
    const oneOrg = await latency(
      () => postureReport(db, principal, { orgId: orgIds[0], staleDays: 7, format: 'json' }, jsonOnly),
      samples,
    );
    const bare = await latency(
      () => db.query('SELECT category, product, status, count(*) FROM device_posture_detections GROUP BY 1, 2, 3'),
      samples,
    );
    lines.push(
      [
        `Posture report: ${orgCount} organizations, ${number(deviceCount)} devices, ${number(loaded[0]!.n)} detections (p50 / p95 of ${samples})`,
      ],
      [
        '  whole fleet (partner)',
        `${ms(fleet.p50)} / ${ms(fleet.p95)}`,
        `${ms(bare.p95)} bare GROUP BY`,
        ratio(fleet.p95 / bare.p95),
        `p95 < ${targets.reportP95Ms} ms`,
        verdict(fleet.p95 < targets.reportP95Ms),
      ],
      [
        '  one organization',
        `${ms(oneOrg.p50)} / ${ms(oneOrg.p95)}`,
        `${ms(bare.p95)} bare GROUP BY`,
        ratio(oneOrg.p95 / bare.p95),
        `p95 < ${targets.reportP95Ms} ms`,
        verdict(oneOrg.p95 < targets.reportP95Ms),
      ],
    );

    status(`${uploadCount} posture uploads at once ...`);
    const { rows: devices } = await admin.query<{ id: string; orgId: string }>(
      `SELECT id, org_id AS "orgId" FROM devices ORDER BY id LIMIT :n::int`,
      { n: uploadCount },
    );
    const audit: AuditContext = { db, pending: [] };
    const snapshot = {
      collectedAt: new Date().toISOString(),
      categories: {
        rmm: [{ name: 'Datto RMM', status: 'active' as const }],
        'remote-access': [{ name: 'TeamViewer', status: 'installed' as const }],
      },
    };
    const uploads = await timed(() =>
      Promise.allSettled(
        devices.map((d) => {
          const agentId = randomUUID();
          return uploadPosture(
            db,
            { actorType: 'agent', agentId, deviceId: d.id, orgId: d.orgId },
            agentId,
            snapshot,
            audit,
          );
        }),
      ),
    );
    await Promise.allSettled(audit.pending.splice(0));
    const failed = uploads.value.filter((r) => r.status === 'rejected').length;
    const trips = await timed(() => Promise.all(devices.map(() => db.query('SELECT 1'))));
    lines.push(
      [''],
      [`${number(devices.length)} posture uploads at once (a pool of 20 connections)`],
      [
        '  all uploads',
        `${ms(uploads.ms)}, ${failed} failed`,
        `${ms(trips.ms)} as many bare round trips`,
        ratio(uploads.ms / trips.ms),
        'no error',
        verdict(failed === 0),
      ],
    );
    // The counts the uploads kept, against a recount of the detections they left.
    const { rows: drift } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         (SELECT * FROM posture_counts EXCEPT SELECT * FROM posture_recount())
         UNION ALL (SELECT * FROM posture_recount() EXCEPT SELECT * FROM posture_counts)) d`,
    );
    lines.push([
      '  counts kept at upload',
      `${drift[0]!.n} rows differ`,
      'a recount of the detections',
      '',
      'equal',
      verdict(drift[0]!.n === 0),
    ]);
    const failedSamples = uploads.value.filter((r) => r.status === 'rejected').slice(0, 3);
    for (const r of failedSamples) status(`upload failed: ${(r as PromiseRejectedResult).reason}`);

    status(`reconciliation of ${number(reconcileCount)} devices ...`);
    const big = await insertOrganizationWithSite(admin, { partnerId, name: 'Big Customer' }, { name: 'HQ' });
    await admin.query(
      `INSERT INTO devices (org_id, site_id, hostname) SELECT :orgId::uuid, :siteId::uuid, 'host-' || i FROM generate_series(1, :n::int) AS i`,
      { orgId: big.id, siteId: big.site!.id as string, n: reconcileCount },
    );
    const list = Array.from({ length: reconcileCount }, (_, i) => ({
      hostname: `HOST-${i + 1 + Math.floor(reconcileCount / 20)}`,
      serial: `SN${i}`,
    }));
    const reconciled = await timed(() => uploadReconciliation(db, principal, big.id, { devices: list }, audit));
    await Promise.allSettled(audit.pending.splice(0));
    const read = await timed(() =>
      db.query('SELECT id, hostname FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL', {
        orgId: big.id,
      }),
    );
    const c = reconciled.value.counts;
    lines.push(
      [''],
      [
        `Reconciliation of ${number(reconcileCount)} listed devices against ${number(reconcileCount)} enrolled (one run)`,
      ],
      [
        `  upload (${c.enrolled} enrolled, ${c.missing} missing, ${c.extra} extra)`,
        ms(reconciled.ms),
        `${ms(read.ms)} bare read of the devices`,
        ratio(reconciled.ms / read.ms),
        `< ${targets.reconcileS} s`,
        verdict(reconciled.ms < targets.reconcileS * 1000),
      ],
    );

    console.log(benchReport({ name: 'management-posture', server, loadAtStart, started, lines }));
  } finally {
    await db.close();
    await admin.close();
    await scratch.drop();
  }
}

await main();
