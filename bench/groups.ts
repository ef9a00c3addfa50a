/**
 * `npm run bench:groups [-- --devices 100000 --contacts 50000 --samples 40]`: the device-group and contact figures,
 * each printed beside a baseline measured in the same run on the same server, with its target:
 *
 * - an organization of --devices devices and 200 dynamic groups: a dynamic group's member page (with its count) and
 *   its count alone, a preview of the same filter, against a bare SELECT of the same rows (the filter written by
 *   hand in SQL); a device's groups against a bare page of the organization's groups;
 * - a contact import of 1,000 rows into an organization of --contacts contacts: preview, commit and the same
 *   import again, against one bare INSERT of the same 1,000 rows.
 *
 * Runs the production use cases (shared/device-groups, shared/contacts) on a scratch database (on DATABASE_URL's
 * server, or an embedded PostgreSQL it starts) and drops it.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { AuditContext } from '#shared/audit/writer.ts';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';
import { commitContactImport, previewContactImport } from '#shared/contacts/import.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import type { DeviceFilter } from '#shared/device-groups/filter.ts';
import { filterCondition, listGroupsOfDevice, listMembers, previewFilter } from '#shared/device-groups/groups.ts';
import { insertGroupRows } from '#shared/device-groups/store.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { benchReport, loadAverage, ms, number, positive, ratio, status, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { latency, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '100000' },
    contacts: { type: 'string', default: '50000' },
    samples: { type: 'string', default: '40' },
  },
  strict: true,
});
const deviceCount = positive('devices', args.devices);
const contactCount = positive('contacts', args.contacts);
const samples = positive('samples', args.samples);

// Targets.
const targets = { memberPageMs: 50, countMs: 150, deviceGroupsMs: 20, previewS: 1, commitS: 2, reimportS: 1 };
const dynamicGroups = 200;
const importRows = 1000;

function adminOf(partnerId: string, orgId: string): Principal {
  return {
    actorType: 'user',
    id: randomUUID(),
    email: 'admin@bench.example',
    name: 'Bench Admin',
    role: 'org_admin',
    scope: 'organization',
    partnerId,
    orgId,
    permissions: scopedPermissions('organization', rolePermissions.org_admin),
  };
}

/** The filter of the measured group: three conditions, about 2% of the organization's devices. */
const threeConditions: DeviceFilter = {
  all: [
    { field: 'osType', op: 'equals', value: 'windows' },
    { field: 'hostname', op: 'startsWith', value: 'wks-' },
    { field: 'lastSeenAt', op: 'withinDays', value: 7 },
  ],
};
/** The same filter written by hand, for the baseline. */
const threeConditionsSql = `lower(d.os_type) = 'windows' AND d.hostname ILIKE 'wks-%' AND d.last_seen_at >= now() - interval '7 days'`;

/** 200 dynamic filters of one to three conditions over the fields of the language. */
function variedFilter(i: number): DeviceFilter {
  const pool: DeviceFilter[] = [
    { field: 'osType', op: 'equals', value: ['windows', 'linux', 'macos'][i % 3]! },
    { field: 'hostname', op: 'startsWith', value: ['wks-', 'srv-', 'web-', 'db-'][i % 4]! },
    { field: 'hostname', op: 'contains', value: String(i % 97).padStart(2, '0') },
    { field: 'lastSeenAt', op: 'withinDays', value: 1 + (i % 30) },
    { field: 'agentStatus', op: 'in', value: ['online', 'degraded'] },
    { field: 'lastIp', op: 'inCidr', value: `10.${i % 8}.0.0/16` },
    { field: 'online', op: 'equals', value: i % 2 === 0 },
    { not: { field: 'osVersion', op: 'startsWith', value: '10.' } },
  ];
  const count = 1 + (i % 3);
  return { all: Array.from({ length: count }, (_, k) => pool[(i + k * 3) % pool.length]!) };
}

async function loadDevices(admin: Db, orgId: string) {
  const { rows: sites } = await admin.query<{ id: string }>(
    'SELECT id FROM sites WHERE org_id = :orgId::uuid ORDER BY created_at',
    { orgId },
  );
  await admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, os_type, os_version, agent_version, agent_status, last_seen_at,
                          last_ip, created_at)
     SELECT :orgId::uuid, :siteId::uuid,
            (ARRAY['wks-', 'srv-', 'web-', 'db-'])[1 + (i / 3) % 4] || lpad(i::text, 6, '0'),
            (ARRAY['windows', 'linux', 'macos'])[1 + i % 3],
            (ARRAY['10.0.19045', '11.0.22631', '22.04', '14.5'])[1 + i % 4],
            '4.' || (i % 7),
            (ARRAY['online', 'online', 'online', 'degraded', 'maintenance'])[1 + i % 5],
            now() - make_interval(mins => (hashint4(i) & 2147483647) % (30 * 24 * 60)),
            '10.' || (i % 8) || '.' || (i / 256) % 256 || '.' || i % 256,
            now() - make_interval(mins => :count::int - i)
       FROM generate_series(1, :count::int) AS i`,
    { orgId, siteId: sites[0]!.id, count: deviceCount },
  );
}

/** A pronounceable name from syllables, so trigram similarity behaves as it does on people's names. */
const syllables = ['ka', 'lo', 'mi', 'ren', 'sa', 'to', 'vi', 'an', 'el', 'or', 'us', 'ber', 'din', 'fa', 'gor', 'hal'];
const syllableSql = (seed: string, k: number) =>
  `(ARRAY[${syllables.map((s) => `'${s}'`).join(',')}])[1 + (hashint4(${seed} + ${k}) & 15)]`;
const nameSql = (seed: string) =>
  `initcap(${[0, 1, 2].map((k) => syllableSql(seed, k)).join(' || ')}) || ' ' || initcap(${[3, 4, 5, 6].map((k) => syllableSql(seed, k)).join(' || ')})`;

async function loadContacts(admin: Db, orgId: string) {
  await admin.query(
    `INSERT INTO contacts (org_id, name, email, roles, source_system, external_id)
     SELECT :orgId::uuid, ${nameSql('i')}, 'person' || i || '@customer.example', '["technical"]', 'psa', 'c-' || i
       FROM generate_series(1, :count::int) AS i`,
    { orgId, count: contactCount },
  );
}

/** 1,000 rows as a migrating MSP sends them: 90% new people, 5% with a known e-mail, 5% with a known name. */
async function importBody(admin: Db, orgId: string) {
  const { rows: known } = await admin.query<{ name: string; email: string }>(
    `SELECT name, email FROM contacts WHERE org_id = :orgId::uuid ORDER BY external_id LIMIT 100`,
    { orgId },
  );
  const { rows: fresh } = await admin.query<{ name: string }>(
    `SELECT ${nameSql('i * 7919')} AS name FROM generate_series(1, ${importRows}) AS i`,
  );
  return {
    rows: fresh.map((row, i) => ({
      externalId: `n-${i}`,
      sourceSystem: 'rmm',
      name: i % 20 === 1 ? known[i % 100]!.name : row.name,
      ...(i % 20 === 0 ? { email: known[i % 100]!.email.toUpperCase() } : { email: `new${i}@customer.example` }),
      title: 'Office manager',
      roles: ['primary'],
    })),
  };
}

async function groupsAtScale(admin: Db, url: string): Promise<string[][]> {
  const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
  const org = await insertOrganizationWithSite(admin, { partnerId: partner.id, name: 'Fleet Corp' }, { name: 'HQ' });
  status(`loading ${number(deviceCount)} devices ...`);
  await loadDevices(admin, org.id);
  const [measured] = await insertGroupRows(admin, org.id, [
    {
      name: 'Recent Windows workstations',
      type: 'dynamic',
      siteId: null,
      parentId: null,
      filter: threeConditions,
      sourceSystem: null,
      externalId: null,
    },
  ]);
  await insertGroupRows(
    admin,
    org.id,
    Array.from({ length: dynamicGroups - 1 }, (_, i) => ({
      name: `Dynamic ${i}`,
      type: 'dynamic' as const,
      siteId: null,
      parentId: null,
      filter: variedFilter(i),
      sourceSystem: null,
      externalId: null,
    })),
  );
  await admin.query('VACUUM ANALYZE devices');
  await admin.query('VACUUM ANALYZE device_groups');

  const db = createPgDb({ connectionString: url, max: 4, applicationName: 'logbook-bench-groups' });
  const principal = adminOf(partner.id, org.id);
  const { rows: someDevice } = await admin.query<{ id: string }>(
    `SELECT id FROM devices WHERE org_id = :orgId::uuid AND hostname LIKE 'wks-%' ORDER BY created_at DESC LIMIT 1`,
    { orgId: org.id },
  );
  const page = { page: 1, limit: 50 };
  const barePage = (orderBy: string) => () =>
    db.query(
      `SELECT d.* FROM devices d WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL AND ${threeConditionsSql}
        ORDER BY ${orderBy} LIMIT 50`,
      { orgId: org.id },
    );
  const bareCount = () =>
    db.query(
      `SELECT count(*) FROM devices d WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL AND ${threeConditionsSql}`,
      { orgId: org.id },
    );
  const condition = filterCondition(threeConditions);
  const count = () =>
    db.query(
      `SELECT count(*) AS total FROM devices d LEFT JOIN agents a ON a.device_id = d.id
        WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL AND (:siteId::uuid IS NULL OR d.site_id = :siteId::uuid)
          AND ${condition.sql}`,
      { ...condition.params, orgId: org.id, siteId: null },
    );
  const { rows: matched } = await bareCount();
  const lines: string[][] = [
    [
      `${number(deviceCount)} devices in one organization, ${dynamicGroups} dynamic groups; the measured group matches ${number(Number(matched[0]!.count))} (p95 of ${samples})`,
    ],
  ];
  const row = async (
    name: string,
    call: () => Promise<unknown>,
    base: () => Promise<unknown>,
    baseName: string,
    target: number,
  ) => {
    status(`${name} ...`);
    const figure = await latency(call, samples);
    const baseline = await latency(base, samples);
    lines.push([
      `  ${name}`,
      `p95 ${ms(figure.p95)} (p50 ${ms(figure.p50)})`,
      `p95 ${ms(baseline.p95)} ${baseName}`,
      ratio(figure.p95 / baseline.p95),
      `p95 < ${target} ms`,
      verdict(figure.p95 < target),
    ]);
  };
  try {
    const bothBare = (orderBy: string) => () => Promise.all([barePage(orderBy)(), bareCount()]);
    await row(
      'member page, newest first (page + count)',
      () => listMembers(db, principal, measured!.id, { ...page, sort: 'newest' }),
      bothBare('d.created_at DESC, d.id DESC'),
      'bare page + count',
      targets.memberPageMs,
    );
    await row(
      'member page, by hostname (page + count)',
      () => listMembers(db, principal, measured!.id, { ...page, sort: 'hostname' }),
      bothBare('d.hostname, d.id'),
      'bare page + count',
      targets.memberPageMs,
    );
    await row('member count alone', count, bareCount, 'bare count', targets.countMs);
    await row(
      'preview of the same filter (page + count)',
      () => previewFilter(db, principal, org.id, { filter: threeConditions }, { ...page, sort: 'newest' }),
      bothBare('d.created_at DESC, d.id DESC'),
      'bare page + count',
      targets.countMs,
    );
    await row(
      `a device's groups (${dynamicGroups} dynamic, one pass)`,
      () => listGroupsOfDevice(db, principal, someDevice[0]!.id, page),
      () =>
        db.query('SELECT * FROM device_groups WHERE org_id = :orgId::uuid ORDER BY lower(name), id LIMIT 50', {
          orgId: org.id,
        }),
      'bare page of groups',
      targets.deviceGroupsMs,
    );
  } finally {
    await db.close();
  }
  return lines;
}

async function contactImport(admin: Db, url: string): Promise<string[][]> {
  const partner = (await insertPartner(admin, 'Import MSP')) as { id: string };
  const org = await insertOrganizationWithSite(admin, { partnerId: partner.id, name: 'People Corp' }, { name: 'HQ' });
  status(`loading ${number(contactCount)} contacts ...`);
  await loadContacts(admin, org.id);
  await admin.query('VACUUM ANALYZE contacts');
  const body = await importBody(admin, org.id);
  const db = createPgDb({ connectionString: url, max: 4, applicationName: 'logbook-bench-contacts' });
  const principal = adminOf(partner.id, org.id);
  const audit: AuditContext = { db, caller: principal, pending: [] };
  const lines: string[][] = [
    [
      `Contact import of ${number(importRows)} rows into an organization of ${number(contactCount)} contacts (one run each)`,
    ],
  ];
  try {
    status('contact import: preview, commit, re-import ...');
    const preview = await timed(() => previewContactImport(db, principal, org.id, body));
    const commit = await timed(async () => {
      const reply = await commitContactImport(db, principal, org.id, body, audit);
      await Promise.all(audit.pending.splice(0));
      return reply;
    });
    const again = await timed(async () => {
      const reply = await commitContactImport(db, principal, org.id, body, audit);
      await Promise.all(audit.pending.splice(0));
      return reply;
    });
    const bare = await timed(() =>
      db.query(
        `INSERT INTO contacts (org_id, name, email, roles, source_system, external_id)
         SELECT :orgId::uuid, r.name, r.email, r.roles, 'bare', r."externalId"
           FROM jsonb_to_recordset(:rows::jsonb) AS r(name text, email text, roles jsonb, "externalId" text)`,
        { orgId: org.id, rows: body.rows },
      ),
    );
    const summary = (s: Record<string, number>) =>
      Object.entries(s)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ');
    const bareText = `${ms(bare.ms)} bare INSERT of the rows`;
    lines.push(
      [
        `  preview (${summary(preview.value.summary)})`,
        ms(preview.ms),
        bareText,
        ratio(preview.ms / bare.ms),
        `< ${targets.previewS} s`,
        verdict(preview.ms < targets.previewS * 1000),
      ],
      [
        `  commit (${summary(commit.value.summary)})`,
        ms(commit.ms),
        bareText,
        ratio(commit.ms / bare.ms),
        `< ${targets.commitS} s`,
        verdict(commit.ms < targets.commitS * 1000),
      ],
      [
        `  re-import (${summary(again.value.summary)})`,
        ms(again.ms),
        bareText,
        ratio(again.ms / bare.ms),
        `< ${targets.reimportS} s`,
        verdict(again.ms < targets.reimportS * 1000),
      ],
    );
  } finally {
    await db.close();
  }
  return lines;
}

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('groups');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  try {
    const { rows } = await admin.query<{ version: string; shared_buffers: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('shared_buffers') AS shared_buffers`,
    );
    const groups = await groupsAtScale(admin, scratch.url);
    const contacts = await contactImport(admin, scratch.url);
    console.log(
      benchReport({
        name: 'device-group and contact',
        server: `PostgreSQL ${rows[0]!.version} on ${scratch.server}, shared_buffers ${rows[0]!.shared_buffers}`,
        loadAtStart,
        started,
        lines: [...groups, [''], ...contacts],
      }),
    );
  } finally {
    await admin.close();
    await scratch.drop();
  }
}

await main();
