/**
 * `npm run bench:patching [-- --orgs 10 --devices 20000 --patches 200 --items 500 --ring 5000 --samples 30]`:
 * the patching figures, each beside a baseline measured in the same run on the same server:
 *
 * - the upload of a complete --items-item inventory snapshot (one device, its previous scan replaced), against the bare
 *   round trip of the same items as one JSON parameter;
 * - the compliance report of one organization of the fleet (--devices devices over --orgs organizations, each device
 *   listing --patches patches), against a bare GROUP BY of the organization's device patches (by state, read through
 *   its devices);
 * - the compliance report of the partner (every organization), against a bare GROUP BY of all its device patches;
 * - an occurrence of a ring of --ring devices (planned and stored; no agent is connected, so nothing is sent), against
 *   the bare read of the ring organization's device ids.
 *
 * Runs the production use cases (shared/patching) on a scratch database and drops it.
 */

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { complianceOf, partnerComplianceOf } from '#shared/patching/compliance.ts';
import { dispatchInstalls, startOccurrence, systemAudit } from '#shared/patching/install.ts';
import { uploadInventory } from '#shared/patching/inventory.ts';
import { ringById } from '#shared/patching/rings.ts';
import { runJobsLocally } from '#shared/queue/work-queue.ts';
import { benchReport, loadAverage, ms, number, positive, ratio, status, verdict } from './support/format.ts';
import { insertBenchOrganizations } from './support/organizations.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { serverSettings } from './support/server-settings.ts';
import { latency, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    orgs: { type: 'string', default: '10' },
    devices: { type: 'string', default: '20000' },
    patches: { type: 'string', default: '200' },
    items: { type: 'string', default: '500' },
    ring: { type: 'string', default: '5000' },
    samples: { type: 'string', default: '30' },
  },
  strict: true,
});
const orgCount = positive('orgs', args.orgs);
const deviceCount = positive('devices', args.devices);
const patchCount = positive('patches', args.patches);
const itemCount = positive('items', args.items);
const ringSize = positive('ring', args.ring);
const samples = positive('samples', args.samples);

const targets = { uploadP95Ms: 100, complianceP95Ms: 200, occurrenceS: 60 };

/** Devices over the organizations (the ring's organization first, with --ring of them), each listing the catalogue. */
async function loadFleet(admin: Db, partnerId: string, orgIds: string[]) {
  const rest = Math.max(0, deviceCount - ringSize);
  await admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, os_type)
     SELECT o.id, (SELECT id FROM sites WHERE org_id = o.id LIMIT 1), 'dev-' || lpad(i::text, 6, '0'), 'windows'
       FROM generate_series(1, :count::int) AS i
       JOIN organizations o ON o.id = (CASE WHEN i <= :ring::int THEN :first::text
                                            ELSE :orgIds::jsonb ->> (1 + i % (:orgs::int - 1)) END)::uuid`,
    { count: ringSize + rest, ring: ringSize, first: orgIds[0]!, orgIds, orgs: Math.max(2, orgIds.length) },
  );
  await admin.query(
    `INSERT INTO patches (partner_id, source, external_id, kb, title, severity, category, release_date)
     SELECT :partnerId::uuid, 'windows-update', 'KB' || (5000000 + i), 'KB' || (5000000 + i), 'Update ' || i,
            CASE WHEN i % 4 = 0 THEN 'critical' ELSE 'important' END,
            CASE WHEN i % 3 = 0 THEN 'security' ELSE 'update-rollup' END, now() - interval '30 days'
       FROM generate_series(1, :n::int) AS i`,
    { partnerId, n: patchCount },
  );
  await admin.query(
    `INSERT INTO device_patch_scans (device_id, source, org_id, scan_id, scanned_at)
     SELECT id, 'windows-update', org_id, 'scan-1', now() - interval '1 hour' FROM devices`,
  );
  await admin.query(
    `INSERT INTO device_patches (device_id, patch_id, org_id, source, state)
     SELECT d.id, p.id, d.org_id, 'windows-update',
            CASE WHEN abs(hashtext(d.id::text || p.id::text)) % 20 = 0 THEN 'missing' ELSE 'installed' END
       FROM devices d CROSS JOIN patches p`,
  );
  // The counts each scan row keeps, as the uploads and install results write them.
  await admin.query(
    `UPDATE device_patch_scans s
        SET installed = c.installed, failed = c.failed, pending_reboot = c.pending_reboot, missing_numbers = c.missing
       FROM (SELECT dp.device_id, count(*) FILTER (WHERE dp.state = 'installed')::int AS installed,
                    count(*) FILTER (WHERE dp.state = 'failed')::int AS failed,
                    count(*) FILTER (WHERE dp.state = 'pending-reboot')::int AS pending_reboot,
                    coalesce(array_agg(p.number ORDER BY p.number) FILTER (WHERE dp.state = 'missing'), '{}') AS missing
               FROM device_patches dp JOIN patches p ON p.id = dp.patch_id GROUP BY dp.device_id) c
      WHERE c.device_id = s.device_id`,
  );
  // The missing patches counted per organization, as the uploads and install results keep them.
  await admin.query('INSERT INTO patch_missing_counts SELECT * FROM patch_missing_recount()');
}

/** A patching policy of the first organization: a rule approving security patches, one ring holding every device. */
async function insertPolicy(admin: Db, partnerId: string, orgId: string) {
  const ringId = randomUUID();
  const items = [
    { key: 'security', type: 'approval-rule', categories: ['security'] },
    {
      key: 'all',
      type: 'ring',
      id: ringId,
      order: 0,
      groupIds: [],
      deferralDays: 0,
      deadlineDays: 7,
      windowMinutes: 240,
      rebootPolicy: 'if-required',
      rebootWarningMinutes: 15,
      promotion: { minDevices: 1, minSuccessPercent: 100, soakHours: 0 },
    },
  ];
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO policies (partner_id, org_id, kind, name, items) VALUES (:partnerId::uuid, :orgId::uuid, 'patching', 'Bench', :items::jsonb)
     RETURNING id`,
    { partnerId, orgId, items },
  );
  await admin.query(
    `INSERT INTO policy_assignments (policy_id, partner_id, org_id, kind, level, target_id)
     VALUES (:policyId::uuid, :partnerId::uuid, :orgId::uuid, 'patching', 'organization', :orgId::uuid)`,
    { policyId: rows[0]!.id, partnerId, orgId },
  );
  return ringId;
}

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('patching');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  const db = createPgDb({ connectionString: scratch.url, max: 20, applicationName: 'logbook-bench-patching' });
  try {
    const server = await serverSettings(admin, scratch.server);
    const { partnerId, orgIds } = await insertBenchOrganizations(admin, Math.max(2, orgCount));
    status(`loading ${number(deviceCount)} devices × ${patchCount} patches ...`);
    await loadFleet(admin, partnerId, orgIds);
    const ringId = await insertPolicy(admin, partnerId, orgIds[0]!);
    await admin.query('VACUUM ANALYZE');
    const { rows: pairs } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM device_patches');
    const lines: string[][] = [];

    status(`inventory uploads of ${itemCount} items ...`);
    const { rows: uploaders } = await admin.query<{ id: string; orgId: string }>(
      `SELECT id, org_id AS "orgId" FROM devices WHERE org_id <> :first::uuid ORDER BY id LIMIT :n::int`,
      { first: orgIds[0]!, n: samples + 3 },
    );
    const items = Array.from({ length: itemCount }, (_, i) => ({
      externalId: `KB${5000001 + i}`,
      kb: `KB${5000001 + i}`,
      title: `Update ${i + 1}`,
      category: i % 3 === 0 ? 'Security Updates' : 'Update Rollups',
      severity: 'Important',
      requiresReboot: false,
      state: i % 20 === 0 ? ('missing' as const) : ('installed' as const),
    }));
    let next = 0;
    const upload = await latency(() => {
      const device = uploaders[next++ % uploaders.length]!;
      const agentId = randomUUID();
      return uploadInventory(db, { actorType: 'agent', agentId, deviceId: device.id, orgId: device.orgId }, agentId, {
        scanId: randomUUID(),
        scannedAt: new Date().toISOString(),
        source: 'windows-update',
        items,
      });
    }, samples);
    const bareUpload = await latency(
      () => db.query('SELECT count(*) FROM jsonb_to_recordset(:items::jsonb) AS i("externalId" text)', { items }),
      samples,
    );
    lines.push(
      [
        `Inventory upload: a ${itemCount}-item complete snapshot replacing a ${patchCount}-patch scan (p50 / p95 of ${samples})`,
      ],
      [
        '  one upload',
        `${ms(upload.p50)} / ${ms(upload.p95)}`,
        `${ms(bareUpload.p95)} bare round trip of the items`,
        ratio(upload.p95 / bareUpload.p95),
        `p95 < ${targets.uploadP95Ms} ms`,
        verdict(upload.p95 < targets.uploadP95Ms),
      ],
    );

    const reportOrg = orgIds[1]!;
    const { rows: orgDevices } = await admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM devices WHERE org_id = :orgId::uuid',
      { orgId: reportOrg },
    );
    status(`compliance of an organization of ${orgDevices[0]!.n} devices ...`);
    const report = await latency(() => complianceOf(db, reportOrg, 7), Math.min(samples, 10), 1);
    const bareReport = await latency(
      () =>
        db.query(
          `SELECT dp.state, count(*) FROM devices d JOIN device_patches dp ON dp.device_id = d.id
            WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL GROUP BY dp.state`,
          { orgId: reportOrg },
        ),
      Math.min(samples, 10),
      1,
    );
    lines.push(
      [''],
      [
        `Compliance report: one organization of ${number(orgDevices[0]!.n)} devices (fleet ${number(deviceCount)} devices, ${number(pairs[0]!.n)} device patches; p50 / p95 of ${Math.min(samples, 10)})`,
      ],
      [
        '  one organization',
        `${ms(report.p50)} / ${ms(report.p95)}`,
        `${ms(bareReport.p95)} bare GROUP BY`,
        ratio(report.p95 / bareReport.p95),
        `p95 < ${targets.complianceP95Ms} ms`,
        verdict(report.p95 < targets.complianceP95Ms),
      ],
    );

    status(`compliance of the partner's ${number(deviceCount)} devices ...`);
    const partnerReport = await latency(() => partnerComplianceOf(db, partnerId, 7), Math.min(samples, 10), 1);
    const barePartner = await latency(
      () => db.query('SELECT state, count(*) FROM device_patches GROUP BY state'),
      Math.min(samples, 10),
      1,
    );
    lines.push(
      [''],
      [
        `Compliance report: the partner, ${orgIds.length} organizations of ${number(deviceCount)} devices (p50 / p95 of ${Math.min(samples, 10)})`,
      ],
      [
        '  the partner',
        `${ms(partnerReport.p50)} / ${ms(partnerReport.p95)}`,
        `${ms(barePartner.p95)} bare GROUP BY`,
        ratio(partnerReport.p95 / barePartner.p95),
        `p95 < ${targets.complianceP95Ms} ms`,
        verdict(partnerReport.p95 < targets.complianceP95Ms),
      ],
    );

    status(`an occurrence of a ring of ${ringSize} devices ...`);
    const of = await ringById(db, ringId);
    // Planned and stored, then sent (dispatchInstalls, which the queue worker runs; no agent is connected here).
    runJobsLocally(() => Promise.resolve());
    const occurrence = await timed(async () => {
      const started = await startOccurrence(
        db,
        of!,
        { key: 'bench', startsAt: new Date(), manual: false },
        systemAudit(db),
      );
      await dispatchInstalls(db, { jobId: started.jobId });
      return started;
    });
    const bareRing = await timed(() =>
      db.query('SELECT id FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL', { orgId: orgIds[0]! }),
    );
    lines.push(
      [''],
      [`Ring occurrence: ${number(ringSize)} devices planned and stored (one run; no agent connected)`],
      [
        `  occurrence (${number(occurrence.value.devices)} devices with installs)`,
        ms(occurrence.ms),
        `${ms(bareRing.ms)} bare read of the devices`,
        ratio(occurrence.ms / bareRing.ms),
        `< ${targets.occurrenceS} s`,
        verdict(occurrence.ms < targets.occurrenceS * 1000),
      ],
    );

    console.log(benchReport({ name: 'patching', server, loadAtStart, started, lines }));
  } finally {
    await db.close();
    await admin.close();
    await scratch.drop();
  }
}

await main();
