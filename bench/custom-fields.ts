/**
 * `npm run bench:custom-fields [-- --devices 100000 --samples 40 --chunk 1000]`: the custom-field figures,
 * end to end through the local HTTP API (the gateway of `npm start`, started in this process), each
 * printed beside a baseline measured in the same run on the same server, with its target:
 *
 * - a values import of 50,000 values (5,000 device rows × 10 fields) against 10,000 enrolled devices: preview,
 *   commit and the same import again, sent as the wizard page sends them (requests of --chunk rows, the commit as
 *   one pass), against one bare multi-row INSERT of the same 50,000 values;
 * - what the commit does to the audit trail: the device.update rows it wrote (one per device), beside the same
 *   changes written as one row per value into another organization's trail;
 * - GET /devices?cf.asset_tag=… at --devices devices with 10 values each: p95 over HTTP against the same rows
 *   selected by a hand-written SQL join.
 *
 * Runs on a scratch database (on DATABASE_URL's server, or an embedded PostgreSQL it starts) and drops it.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { routes } from '#functions/routes.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { startHttpGateway } from '#infra/local/http-gateway.ts';
import { signUserToken } from '#infra/local/tokens.ts';
import { type AuditContext, auditChange, flushAudit } from '#shared/audit/writer.ts';
import { valueChangeEvents } from '#shared/custom-fields/values.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { loadAverage, ms, ratio, status, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { latency, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '100000' },
    samples: { type: 'string', default: '40' },
    chunk: { type: 'string', default: '1000' },
  },
  strict: true,
});
const integer = (name: string, text: string, min: number) => {
  const n = Number(text.replaceAll('_', ''));
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} takes an integer of at least ${min}, not ${text}`);
  return n;
};
const fleet = integer('devices', args.devices, 10_000);
const samples = integer('samples', args.samples, 1);
const chunkRows = integer('chunk', args.chunk, 1);

// Targets.
const targets = { previewS: 5, commitS: 15, reimportS: 5, filterP95Ms: 50 };
const enrolled = 10_000;
const importDevices = 5_000;
const fieldCount = 10;

const s = (n: number) => `${(n / 1000).toFixed(2)} s`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

async function loadDevices(admin: Db, orgId: string, from: number, to: number) {
  const { rows } = await admin.query<{ id: string }>('SELECT id FROM sites WHERE org_id = :orgId::uuid', { orgId });
  await admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, serial_number, os_type)
     SELECT :orgId::uuid, :siteId::uuid, 'wks-' || lpad(i::text, 6, '0'), 'SN' || lpad(i::text, 8, '0'), 'windows'
       FROM generate_series(:from::int, :to::int) AS i`,
    { orgId, siteId: rows[0]!.id, from, to },
  );
}

type ImportReply = {
  summary: Record<string, number>;
  rows: { row: number; digest: string }[];
  pass?: { closed: boolean; summaryWritten: boolean };
};

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('custom_fields');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  let gateway: Awaited<ReturnType<typeof startHttpGateway>> | undefined;
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    process.env.APP_DATABASE_URL = roleUrls(scratch.url).app;
    process.env.JWT_SECRET ??= randomBytes(32).toString('base64url');
    process.env.LOG_LEVEL ??= 'WARN';
    gateway = await startHttpGateway({ port: 0, host: '127.0.0.1', routes });
    const base = `${gateway.url}/api/v1`;

    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = await insertOrganizationWithSite(admin, { partnerId: partner.id, name: 'Fleet Corp' }, { name: 'HQ' });
    const trailOrg = await insertOrganizationWithSite(
      admin,
      { partnerId: partner.id, name: 'Trail Corp' },
      { name: 'HQ' },
    );
    const token = await signUserToken({
      sub: randomUUID(),
      email: 'admin@bench.example',
      name: 'Bench Admin',
      role: 'partner_admin',
      scope: 'partner',
      partnerId: partner.id,
    });
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await reply.json()) as T;
      if (!reply.ok) throw new Error(`${method} ${path}: ${reply.status} ${JSON.stringify(json).slice(0, 500)}`);
      return json;
    };

    status(`loading ${enrolled.toLocaleString('en')} devices; ${fieldCount} definitions through the API ...`);
    await loadDevices(admin, org.id, 1, enrolled);
    const keys = ['asset_tag', ...Array.from({ length: fieldCount - 1 }, (_, i) => `udf${i + 2}`)];
    const fields: { id: string; key: string }[] = [];
    for (const key of keys) fields.push(await call('POST', '/custom-fields', { key, name: key, type: 'text' }));
    const rows = Array.from({ length: importDevices }, (_, i) => ({
      hostname: `WKS-${String(i * 2 + 1).padStart(6, '0')}`,
      ...Object.fromEntries(keys.map((key, k) => [key, `${key.toUpperCase()}-${i}-${k}`])),
    }));
    const sha256 = createHash('sha256').update(JSON.stringify(rows)).digest('hex');
    const chunks = Array.from({ length: Math.ceil(rows.length / chunkRows) }, (_, i) =>
      rows.slice(i * chunkRows, (i + 1) * chunkRows),
    );
    const body = { sourceSystem: 'generic', fileName: 'bench.json' };

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

    const total = (replies: ImportReply[], status: string) => replies.reduce((n, r) => n + (r.summary[status] ?? 0), 0);
    const commit = async (previews: ImportReply[]) => {
      const pass = { id: randomUUID(), sha256, rows: rows.length };
      const replies: ImportReply[] = [];
      for (const [i, chunk] of chunks.entries())
        replies.push(
          await call<ImportReply>('POST', '/custom-fields/import/values', {
            ...body,
            rows: chunk,
            pass: { ...pass, firstRow: i * chunkRows },
            expected: previews[i]!.rows.map((r) => ({ row: r.row, digest: r.digest })),
          }),
        );
      return replies;
    };
    status(`preview, commit, re-import (requests of ${chunkRows.toLocaleString('en')} rows) ...`);
    const previewed = await timed(async () => {
      const replies: ImportReply[] = [];
      for (const chunk of chunks)
        replies.push(await call<ImportReply>('POST', '/custom-fields/import/values/preview', { ...body, rows: chunk }));
      return replies;
    });
    const committed = await timed(() => commit(previewed.value));
    const again = await timed(() => commit(previewed.value));
    if (
      total(committed.value, 'set') !== importDevices * fieldCount ||
      total(again.value, 'unchanged') !== importDevices * fieldCount
    )
      throw new Error(`unexpected counts: ${JSON.stringify([committed.value[0]!.summary, again.value[0]!.summary])}`);

    const trail = async (orgId: string, action: string) =>
      (
        await admin.query<{ rows: number; bytes: number }>(
          `SELECT count(*)::int AS rows, coalesce(sum(pg_column_size(a.*)), 0)::bigint::float8 AS bytes
             FROM audit_logs a WHERE org_id = :orgId::uuid AND action = :action::text`,
          { orgId, action },
        )
      ).rows[0]!;
    const perDevice = await trail(org.id, 'device.update');
    const summaries = await trail(org.id, 'custom_field.import.values');
    status('the same 50,000 changes as one audit row per value, into another organization ...');
    const perValueWrite = await timed(async () => {
      const audit: AuditContext = { db: admin, pending: [] };
      const changes = rows.flatMap((row, i) =>
        fields.map((field) => ({
          device: {
            id: randomUUID(),
            orgId: trailOrg.id,
            partnerId: partner.id,
            hostname: row.hostname,
            displayName: null,
            osType: 'windows',
          },
          field: { ...field, type: 'text' } as Parameters<typeof valueChangeEvents>[0][number]['field'],
          before: null,
          after: `${field.key.toUpperCase()}-${i}`,
        })),
      );
      for (let i = 0; i < changes.length; i += 1000)
        await admin.transaction((tx) =>
          auditChange(
            tx,
            audit,
            changes.slice(i, i + 1000).flatMap((change) => valueChangeEvents([change])),
          ),
        );
      await flushAudit(audit);
    });
    const perValue = await trail(trailOrg.id, 'device.update');

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
    const filter = (
      await latency(async () => {
        const reply = await call<{ data: { hostname: string }[] }>(
          'GET',
          `/devices?cf.asset_tag=${encodeURIComponent(wanted)}&limit=50`,
        );
        if (reply.data.length !== 1) throw new Error(`cf.asset_tag found ${reply.data.length} devices`);
      }, samples)
    ).p95;
    const hand = (
      await latency(
        () =>
          admin.query(
            `SELECT d.id, d.hostname FROM devices d JOIN device_custom_field_values v ON v.device_id = d.id
           JOIN custom_field_definitions f ON f.id = v.field_id
          WHERE f.key = 'asset_tag' AND v.value #>> '{}' = :wanted::text AND d.deleted_at IS NULL ORDER BY d.hostname LIMIT 50`,
            { wanted },
          ),
        samples,
      )
    ).p95;
    const { rows: version } = await admin.query<{ version: string }>(
      `SELECT current_setting('server_version') AS version`,
    );
    const figures = [
      [
        `values import, preview (50,000 values, ${chunks.length} requests)`,
        s(previewed.ms),
        s(bare.ms),
        ratio(previewed.ms / bare.ms),
        `< ${targets.previewS} s`,
        verdict(previewed.ms < targets.previewS * 1000),
      ],
      [
        `values import, commit (one pass, ${chunks.length} requests)`,
        s(committed.ms),
        s(bare.ms),
        ratio(committed.ms / bare.ms),
        `< ${targets.commitS} s`,
        verdict(committed.ms < targets.commitS * 1000),
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
HTTP through the local API gateway in this process; ${availableParallelism()} CPUs shared by the server, the gateway,
this client and other work on the machine; load average ${loadAtStart} at the start and ${loadAverage()} at the end.
Baselines: one bare multi-row INSERT of the same 50,000 values; the cf filter's rows by a hand-written SQL join.

${formatTable(['', 'figure', 'baseline (same run)', 'ratio', 'target', ''], figures)}

Audit trail of the commit (50,000 values on 5,000 devices):
  one row per device (what the import writes): ${perDevice.rows.toLocaleString('en')} device.update rows, ${mib(perDevice.bytes)}, written within the commit above;
  one row per value (the alternative, same changes): ${perValue.rows.toLocaleString('en')} rows, ${mib(perValue.bytes)}, ${s(perValueWrite.ms)} to write;
  summary rows of the two passes (commit and again): ${summaries.rows}.
Done in ${((performance.now() - started) / 1000 / 60).toFixed(1)} min.`);
  } finally {
    await gateway?.close();
    await closeAppDb();
    await admin.close();
    await scratch.drop();
  }
}

await main();
