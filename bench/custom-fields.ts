/**
 * `npm run bench:custom-fields [-- --devices 100000 --samples 40]`: the figures of issue 16 "Performance", each
 * printed beside a baseline measured in the same run on the same server, with its target:
 *
 * - a values import of 50,000 values (5,000 device rows × 10 fields) against 10,000 enrolled devices: preview,
 *   commit and the same import again, against one bare multi-row INSERT of the same 50,000 values;
 * - GET /devices?cf.asset_tag=… at --devices devices with 10 values each: p95 of the listing use case against the
 *   same rows selected by a hand-written SQL join.
 *
 * Runs the production use cases (shared/custom-fields, shared/hierarchy) on a scratch database (on DATABASE_URL's
 * server, or an embedded PostgreSQL it starts) and drops it; the HTTP layer is not in the figures.
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type AuditContext, flushAudit } from '#shared/audit/writer.ts';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';
import { commitValuesImport, previewValuesImport } from '#shared/custom-fields/import-values.ts';
import { type DefinitionRecord, insertDefinition } from '#shared/custom-fields/store.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { listDevices } from '#shared/hierarchy/devices.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';

const { values: args } = parseArgs({
  options: { devices: { type: 'string', default: '100000' }, samples: { type: 'string', default: '40' } },
  strict: true,
});
const positive = (name: string, text: string) => {
  const n = Number(text.replaceAll('_', ''));
  if (!Number.isInteger(n) || n < 10_000) throw new Error(`--${name} takes an integer of at least 10000, not ${text}`);
  return n;
};
const fleet = positive('devices', args.devices);
const samples = Number(args.samples);
if (!Number.isInteger(samples) || samples < 1)
  throw new Error(`--samples takes a positive integer, not ${args.samples}`);

// issue 16 "Performance".
const targets = { previewS: 5, commitS: 15, reimportS: 5, filterP95Ms: 50 };
const enrolled = 10_000;
const importDevices = 5_000;
const fieldCount = 10;

const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`;
const s = (n: number) => `${(n / 1000).toFixed(2)} s`;
const ratio = (r: number) => `${r < 1 ? r.toFixed(2) : r.toFixed(1)}x`;
const verdict = (pass: boolean) => (pass ? 'PASS' : 'MISS');
const loadAverage = () => loadavg()[0]!.toFixed(1);
const status = (line: string) => process.stderr.write(`${line}\n`);

async function timed<T>(call: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await call();
  return { ms: performance.now() - started, value };
}

async function p95(call: () => Promise<unknown>) {
  for (let i = 0; i < 3; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) times.push((await timed(call)).ms);
  times.sort((a, b) => a - b);
  return times[Math.min(times.length - 1, Math.ceil(0.95 * times.length) - 1)]!;
}

const partnerAdmin = (partnerId: string): Principal => ({
  actorType: 'user',
  id: randomUUID(),
  email: 'admin@bench.example',
  name: 'Bench Admin',
  role: 'partner_admin',
  scope: 'partner',
  partnerId,
  orgId: null,
  permissions: scopedPermissions('partner', rolePermissions.partner_admin),
});

async function loadDevices(admin: Db, orgId: string, from: number, to: number) {
  const { rows } = await admin.query<{ id: string }>('SELECT id FROM sites WHERE org_id = :orgId::uuid', { orgId });
  await admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, serial_number, os_type)
     SELECT :orgId::uuid, :siteId::uuid, 'wks-' || lpad(i::text, 6, '0'), 'SN' || lpad(i::text, 8, '0'), 'windows'
       FROM generate_series(:from::int, :to::int) AS i`,
    { orgId, siteId: rows[0]!.id, from, to },
  );
}

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('custom_fields');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  try {
    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = await insertOrganizationWithSite(admin, { partnerId: partner.id, name: 'Fleet Corp' }, { name: 'HQ' });
    const principal = partnerAdmin(partner.id);
    status(`loading ${enrolled.toLocaleString('en')} devices and ${fieldCount} definitions ...`);
    await loadDevices(admin, org.id, 1, enrolled);
    const keys = ['asset_tag', ...Array.from({ length: fieldCount - 1 }, (_, i) => `udf${i + 2}`)];
    const fields: DefinitionRecord[] = [];
    for (const [i, key] of keys.entries())
      fields.push(
        await insertDefinition(admin, {
          partnerId: partner.id,
          orgId: null,
          scope: 'device',
          key,
          name: key,
          type: 'text',
          choices: null,
          min: null,
          max: null,
          required: false,
          defaultValue: null,
          description: null,
          osTypes: null,
          scriptWritable: false,
          sourceSystem: 'datto-rmm',
          externalId: `udf${i + 1}`,
        }),
      );
    const rows = Array.from({ length: importDevices }, (_, i) => ({
      hostname: `WKS-${String(i * 2 + 1).padStart(6, '0')}`,
      ...Object.fromEntries(keys.map((key, k) => [key, `${key.toUpperCase()}-${i}-${k}`])),
    }));
    const input = { sourceSystem: 'datto-rmm' as const, rows, fileName: 'bench.json' };

    status('baseline: one bare INSERT of the 50,000 values ...');
    const { rows: ids } = await admin.query<{ id: string; hostname: string }>(
      'SELECT id, hostname FROM devices WHERE org_id = :orgId::uuid',
      { orgId: org.id },
    );
    const idOf = new Map(ids.map((d) => [d.hostname.toUpperCase(), d.id]));
    const values = rows.flatMap((row) =>
      fields.map((field) => ({
        deviceId: idOf.get(row.hostname)!,
        fieldId: field.id,
        value: JSON.stringify((row as Record<string, string>)[field.key]),
      })),
    );
    const bare = await timed(() =>
      admin.query(
        `INSERT INTO device_custom_field_values (device_id, field_id, value)
         SELECT r."deviceId", r."fieldId", r.value::jsonb FROM jsonb_to_recordset(:values::jsonb) AS r("deviceId" uuid, "fieldId" uuid, value text)`,
        { values: JSON.stringify(values) },
      ),
    );
    await admin.query('DELETE FROM device_custom_field_values');

    const run = async (commit: boolean) => {
      const audit: AuditContext = { db: admin, pending: [] };
      const result = commit
        ? await commitValuesImport(admin, principal, input, audit)
        : await previewValuesImport(admin, principal, input);
      await flushAudit(audit);
      return result;
    };
    status('preview, commit, re-import ...');
    const preview = await timed(() => run(false));
    const commit = await timed(() => run(true));
    const again = await timed(() => run(true));
    const { rows: trail } = await admin.query<{ rows: number; bytes: number }>(
      `SELECT count(*)::int AS rows, coalesce(sum(pg_column_size(details)), 0)::int AS bytes FROM audit_logs WHERE action = 'device.update'`,
    );

    status(`loading ${(fleet - enrolled).toLocaleString('en')} more devices and ${fieldCount} values each ...`);
    await loadDevices(admin, org.id, enrolled + 1, fleet);
    await admin.query('DELETE FROM device_custom_field_values');
    await admin.query(
      `INSERT INTO device_custom_field_values (device_id, field_id, value)
       SELECT d.id, f.id, to_jsonb(f.key || '-' || substr(d.hostname, 5)) FROM devices d CROSS JOIN custom_field_definitions f`,
    );
    await admin.query('ANALYZE devices');
    await admin.query('ANALYZE device_custom_field_values');
    const wanted = `asset_tag-${String(Math.floor(fleet / 2)).padStart(6, '0')}`;
    const filter = await p95(() => listDevices(admin, principal, { page: 1, limit: 50, 'cf.asset_tag': wanted }));
    const hand = await p95(() =>
      admin.query(
        `SELECT d.id, d.hostname FROM devices d JOIN device_custom_field_values v ON v.device_id = d.id
           JOIN custom_field_definitions f ON f.id = v.field_id
          WHERE f.key = 'asset_tag' AND v.value #>> '{}' = :wanted::text AND d.deleted_at IS NULL ORDER BY d.hostname LIMIT 50`,
        { wanted },
      ),
    );
    const { rows: version } = await admin.query<{ version: string }>(
      `SELECT current_setting('server_version') AS version`,
    );
    const figures = [
      [
        'values import, preview (50,000 values)',
        s(preview.ms),
        s(bare.ms),
        ratio(preview.ms / bare.ms),
        `< ${targets.previewS} s`,
        verdict(preview.ms < targets.previewS * 1000),
      ],
      [
        'values import, commit',
        s(commit.ms),
        s(bare.ms),
        ratio(commit.ms / bare.ms),
        `< ${targets.commitS} s`,
        verdict(commit.ms < targets.commitS * 1000),
      ],
      [
        'values import, again (all unchanged)',
        s(again.ms),
        s(bare.ms),
        ratio(again.ms / bare.ms),
        `< ${targets.reimportS} s`,
        verdict(again.ms < targets.reimportS * 1000),
      ],
      [
        `GET /devices?cf.asset_tag= p95 (${fleet.toLocaleString('en')} devices × 10)`,
        ms(filter),
        ms(hand),
        ratio(filter / hand),
        `< ${targets.filterP95Ms} ms`,
        verdict(filter < targets.filterP95Ms),
      ],
    ];
    console.log(`
Logbook custom-field benchmark (${new Date().toISOString().slice(0, 16)}Z): PostgreSQL ${version[0]!.version} on ${scratch.server};
${availableParallelism()} CPUs shared by the server, this client and other work on the machine,
load average ${loadAtStart} at the start and ${loadAverage()} at the end.

${formatTable(['', 'figure', 'baseline (same run)', 'ratio', 'target', ''], figures)}

Commit: ${commit.value.summary.set.toLocaleString('en')} values set; again: ${again.value.summary.unchanged.toLocaleString('en')} unchanged.
Audit trail of the commit: ${trail[0]!.rows.toLocaleString('en')} device.update rows (one per device), ${(trail[0]!.bytes / 1024 / 1024).toFixed(1)} MiB of details.
Done in ${((performance.now() - started) / 1000 / 60).toFixed(1)} min.`);
  } finally {
    await admin.close();
    await scratch.drop();
  }
}

await main();
