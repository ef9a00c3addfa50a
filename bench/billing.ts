import { parseArgs } from 'node:util';
import { createContract } from '#shared/billing/contracts.ts';
import { statementDocument } from '#shared/billing/documents.ts';
import { runDueInvoices } from '#shared/billing/due-run.ts';
import { estimateInvoice } from '#shared/billing/invoices.ts';
import { createContract as contractSchema } from '#shared/billing/schemas.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { benchReport, loadAverage, ms, number, positive, ratio, status, verdict } from './support/format.ts';
import { partnerAdmin } from './support/principals.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { latency, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    orgs: { type: 'string', default: '1000' },
    devices: { type: 'string', default: '100' },
    samples: { type: 'string', default: '200' },
  },
  strict: true,
});
const orgCount = positive('orgs', args.orgs);
const deviceCount = positive('devices', args.devices);
const samples = positive('samples', args.samples);

const targets = { yearS: 60, statementP95Ms: 200 };

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('billing');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  const db = createPgDb({ connectionString: scratch.url, max: 10, applicationName: 'logbook-bench-billing' });
  try {
    const { rows: server } = await admin.query<{ version: string; shared_buffers: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('shared_buffers') AS shared_buffers`,
    );
    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const principal = partnerAdmin(partner.id);
    status(`creating ${number(orgCount)} organizations with a contract each ...`);
    const orgIds: string[] = [];
    const contract = contractSchema.parse({
      currency: 'EUR',
      startDate: '2025-01-01',
      intervalMonths: 1,
      billing: 'arrears',
      timezone: 'Europe/Berlin',
      taxRatePercent: '19',
      lines: [
        { type: 'flat', description: 'Service desk', amount: '50.00' },
        { type: 'per-device', description: 'Managed devices', unitPrice: '4.00' },
        { type: 'included-overage', description: 'Servers beyond 5', includedQuantity: 5, unitPrice: '9.50' },
      ],
    });
    const audit = { db, caller: principal, pending: [] as Promise<void>[] };
    for (let i = 0; i < orgCount; i++) {
      const org = await insertOrganizationWithSite(
        admin,
        { partnerId: partner.id, name: `Customer ${i}` },
        { name: 'HQ' },
      );
      orgIds.push(org.id);
      await createContract(db, principal, org.id, contract, audit);
    }
    await Promise.allSettled(audit.pending.splice(0));
    status(`loading ${number(orgCount * deviceCount)} devices and a year of enrollments and deletions ...`);
    // Per organization: 80 % enrolled before the year, a fifth enrolled during it; a fifth deleted during it.
    await admin.query(
      `INSERT INTO devices (org_id, site_id, hostname, os_type, os_version, created_at, deleted_at)
       SELECT o.id, s.id, 'dev-' || i, 'windows', CASE WHEN i % 10 = 0 THEN 'Windows Server 2022' ELSE 'Windows 11' END,
              CASE WHEN i % 5 = 0 THEN timestamptz '2025-01-01' + make_interval(mins => abs(hashtext(o.id::text || i)) % 525600)
                   ELSE timestamptz '2024-06-01' END,
              CASE WHEN i % 5 = 1 THEN timestamptz '2025-01-01' + make_interval(mins => abs(hashtext(i || o.id::text)) % 525600) END
         FROM organizations o JOIN sites s ON s.org_id = o.id CROSS JOIN generate_series(1, :devices::int) AS i`,
      { devices: deviceCount },
    );
    // Their audit rows, sealed into each organization's chain by the database as any other.
    for (const [action, column] of [
      ['device.create', 'created_at'],
      ['device.delete', 'deleted_at'],
    ] as const)
      await admin.query(
        `INSERT INTO audit_entries (org_id, timestamp, actor_type, actor_id, action, resource_type, resource_id, resource_name)
         SELECT org_id, ${column}, 'agent', gen_random_uuid(), :action::text, 'device', id, hostname
           FROM devices WHERE ${column} IS NOT NULL ORDER BY org_id, ${column}`,
        { action },
      );
    await admin.query('VACUUM ANALYZE');
    const { rows: counts } = await admin.query<{ devices: number; audit: number }>(
      'SELECT (SELECT count(*)::int FROM devices) AS devices, (SELECT count(*)::int FROM audit_entries) AS audit',
    );

    status('the daily run over a year of monthly periods ...');
    const year = await timed(() => runDueInvoices(db, { asOf: new Date('2026-01-01T12:00:00Z') }));
    const { rows: invoiceCount } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM invoices');
    const periods = Array.from({ length: 12 }, (_, m) => {
      const start = new Date(Date.UTC(2025, m, 1)).toISOString().slice(0, 10);
      const end = new Date(Date.UTC(2025, m + 1, 1)).toISOString().slice(0, 10);
      return { start, end };
    });
    const bareReads = await timed(async () => {
      for (const orgId of orgIds)
        for (const period of periods)
          await db.query(
            `SELECT d.id, d.hostname, d.created_at, d.deleted_at FROM devices d
              WHERE d.org_id = :orgId::uuid
                AND d.created_at < (:to::date::timestamp AT TIME ZONE 'Europe/Berlin')
                AND (d.deleted_at IS NULL OR d.deleted_at >= (:from::date::timestamp AT TIME ZONE 'Europe/Berlin'))`,
            { orgId, from: period.start, to: period.end },
          );
    });

    status('usage statements ...');
    const { rows: invoices } = await admin.query<{ id: string }>(
      'SELECT id FROM invoices ORDER BY random() LIMIT :n::int',
      { n: samples },
    );
    let next = 0;
    const read = await latency(
      () => statementDocument(db, principal, invoices[next++ % invoices.length]!.id, 'json'),
      samples,
    );
    const { rows: contracts } = await admin.query<{ id: string }>('SELECT id FROM contracts ORDER BY random()');
    const fresh = await latency(
      () => estimateInvoice(db, principal, contracts[next++ % contracts.length]!.id, '2025-06-01'),
      samples,
    );
    const bare = await latency(
      () =>
        db.query('SELECT id, hostname, created_at, deleted_at FROM devices WHERE org_id = :orgId::uuid', {
          orgId: orgIds[next++ % orgIds.length]!,
        }),
      samples,
    );

    const lines = [
      [
        `A year of monthly invoices: ${number(orgCount)} organizations, ${number(counts[0]!.devices)} devices, ${number(counts[0]!.audit)} audit rows`,
      ],
      [
        `  the daily run, catching up (${number(invoiceCount[0]!.n)} invoices, ${year.value.failed} failed)`,
        `${(year.ms / 1000).toFixed(1)} s`,
        `${(bareReads.ms / 1000).toFixed(1)} s bare device reads`,
        ratio(year.ms / bareReads.ms),
        `< ${targets.yearS} s`,
        verdict(year.ms < targets.yearS * 1000 && year.value.failed === 0),
      ],
      [''],
      [`One usage statement (p50 / p95 of ${samples})`],
      [
        '  read from its invoice',
        `${ms(read.p50)} / ${ms(read.p95)}`,
        `${ms(bare.p95)} bare read of the devices`,
        ratio(read.p95 / bare.p95),
        `p95 < ${targets.statementP95Ms} ms`,
        verdict(read.p95 < targets.statementP95Ms),
      ],
      [
        '  computed afresh (estimate)',
        `${ms(fresh.p50)} / ${ms(fresh.p95)}`,
        `${ms(bare.p95)} bare read of the devices`,
        ratio(fresh.p95 / bare.p95),
        `p95 < ${targets.statementP95Ms} ms`,
        verdict(fresh.p95 < targets.statementP95Ms),
      ],
    ];
    console.log(
      benchReport({
        name: 'billing',
        server: `PostgreSQL ${server[0]!.version} on ${scratch.server}, shared_buffers ${server[0]!.shared_buffers}`,
        loadAtStart,
        started,
        lines: lines.map((line) => line.map(String)),
      }),
    );
  } finally {
    await db.close();
    await admin.close();
    await scratch.drop();
  }
}

await main();
