import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '#functions/queue/jobs.ts';
import { historyMoveJobKind, runHistoryMove } from '#shared/audit/history-lane.ts';
import { type Job, runJobsLocally } from '#shared/queue/work-queue.ts';
import { useApi } from '#test/support/api.ts';
import { historyImportCounts } from '#test/support/history-import.ts';
import { createTenant, orgUser, partnerUser, type Tenant } from '#test/support/tenants.ts';

const IMPORT = '/api/v1/audit-logs/import';
const PREVIEW = '/api/v1/audit-logs/import/preview';
const t = useApi();

/** The move jobs the imports armed: held here, so the rows wait in the lane until a test moves them. */
const armed: Job[] = [];
beforeAll(() =>
  runJobsLocally(async (job) => {
    if (job.kind === historyMoveJobKind) armed.push(job);
    else await runJob(job);
  }),
);
afterAll(() => runJobsLocally(runJob));

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

/** An hour ago, the same in every row: a row sent again is the same row. */
const anHourAgo = minutesAgo(60);

const row = (externalId: string, extra: Record<string, unknown> = {}) => ({
  externalId,
  timestamp: anHourAgo,
  action: 'device.reboot',
  actorId: 'tech-7',
  actorEmail: 'tech7@oldrmm.test',
  actorName: 'Tech Seven',
  resourceType: 'device',
  resourceId: 'dev-123',
  resourceName: 'PC-ACCOUNTING',
  details: { reason: 'patch window' },
  ...extra,
});

const post = (path: string, token: string, body: unknown, headers?: Record<string, string>) =>
  t.api.request('POST', path, { token, body, headers });

const { laneRows, importKeys, summaryRows, entriesProper } = historyImportCounts(() => t.db.admin);

const search = (tenant: Tenant, q: string) =>
  t.api.request('GET', `/api/v1/audit-logs/search?q=${encodeURIComponent(q)}`, { token: tenant.orgToken });
const verify = (tenant: Tenant) => t.api.request('GET', '/api/v1/audit-logs/verify', { token: tenant.orgToken });

describe('POST /audit-logs/import/preview', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(t.api, 'Preview');
  });

  it('annotates every row and stores nothing: no lane row, no key, no audit row', async () => {
    const reply = await post(PREVIEW, tenant.orgToken, { sourceSystem: 'datto', rows: [row('p-1'), row('p-2')] });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      committed: false,
      summary: { create: 2, update: 0, unchanged: 0, held: 0, refused: 0 },
      rows: [
        { row: 1, externalId: 'p-1', annotation: 'create', outcome: 'create' },
        { row: 2, externalId: 'p-2', annotation: 'create', outcome: 'create' },
      ],
      waiting: false,
    });
    expect(await laneRows(tenant.orgId)).toBe(0);
    expect(await importKeys(tenant.orgId)).toBe(0);
    expect(await summaryRows(tenant.orgId)).toBe(0);
    expect((await search(tenant, 'PC-ACCOUNTING')).body.data).toEqual([]);
  });
});

describe('POST /audit-logs/import', () => {
  let tenant: Tenant;
  let entryId: string;
  beforeAll(async () => {
    tenant = await createTenant(t.api, 'Commit');
  });

  it('stores the rows in the lane, readable and searchable at once with details.imported, and writes one summary row', async () => {
    armed.length = 0;
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('c-1'), row('c-2', { action: 'user.login', actorType: 'api_key', result: 'failure' })],
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      committed: true,
      summary: { create: 2, update: 0, unchanged: 0, held: 0, refused: 0 },
      rows: [
        { row: 1, externalId: 'c-1', annotation: 'create', outcome: 'create', entryId: expect.any(String) },
        { row: 2, externalId: 'c-2', annotation: 'create', outcome: 'create', entryId: expect.any(String) },
      ],
      waiting: true,
    });
    entryId = reply.body.rows[0].entryId;
    expect(armed.map((job) => job.kind)).toEqual([historyMoveJobKind]);
    expect(await laneRows(tenant.orgId)).toBe(2);
    expect(await importKeys(tenant.orgId)).toBe(2);

    const found = await search(tenant, 'patch window');
    expect(found.status).toBe(200);
    expect(found.body.data.map((entry: { id: string }) => entry.id).sort()).toEqual(
      reply.body.rows.map((r: { entryId: string }) => r.entryId).sort(),
    );
    const entry = found.body.data.find((e: { id: string }) => e.id === entryId);
    expect(entry).toMatchObject({
      orgId: tenant.orgId,
      action: 'device.reboot',
      actorType: 'user',
      user: { email: 'tech7@oldrmm.test', name: 'Tech Seven' },
      resource: { type: 'device', id: null, name: 'PC-ACCOUNTING' },
      result: 'success',
      details: {
        reason: 'patch window',
        actor: { name: 'Tech Seven' },
        imported: {
          sourceSystem: 'datto',
          externalId: 'c-1',
          actorId: 'tech-7',
          resourceId: 'dev-123',
          importedBy: { actorType: 'user', id: expect.any(String) },
          importedAt: expect.any(String),
        },
      },
    });
    // One source actor is one id, in every import.
    const second = found.body.data.find((e: { id: string }) => e.id !== entryId);
    expect(second).toMatchObject({ action: 'user.login', actorType: 'api_key', result: 'failure' });
    expect(second.user.id).toBe(entry.user.id);
    expect(entry.user.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const { rows: summaries } = await t.db.admin.query<{ details: Record<string, unknown>; resourceId: string }>(
      `SELECT details, resource_id::text AS "resourceId", resource_type AS "resourceType" FROM audit_logs
        WHERE org_id = :orgId::uuid AND action = 'audit.history.import'`,
      { orgId: tenant.orgId },
    );
    expect(summaries).toEqual([
      {
        resourceId: tenant.orgId,
        resourceType: 'organization',
        details: expect.objectContaining({
          sourceSystem: 'datto',
          rows: 2,
          create: 2,
          update: 0,
          unchanged: 0,
          held: 0,
          refused: 0,
        }),
      },
    ]);
    const verified = await verify(tenant);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ ok: true });
  });

  it('answers a second identical import all unchanged and stores no entry', async () => {
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('c-1'), row('c-2', { action: 'user.login', actorType: 'api_key', result: 'failure' })],
    });
    expect(reply.status).toBe(200);
    expect(reply.body.summary).toEqual({ create: 0, update: 0, unchanged: 2, held: 0, refused: 0 });
    expect(reply.body.rows).toEqual([
      { row: 1, externalId: 'c-1', annotation: 'unchanged', outcome: 'unchanged' },
      { row: 2, externalId: 'c-2', annotation: 'unchanged', outcome: 'unchanged' },
    ]);
    expect(await laneRows(tenant.orgId)).toBe(2);
    expect(await importKeys(tenant.orgId)).toBe(2);
  });

  it('finds a row the same whatever offset and digits its timestamp is written with', async () => {
    // The same instant two hours ahead in +02:00, with microseconds.
    const shifted = new Date(Date.parse(anHourAgo) + 2 * 3_600_000).toISOString().replace('Z', '000+02:00');
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('c-1', { timestamp: shifted })],
    });
    expect(reply.status).toBe(200);
    expect(reply.body.rows).toEqual([{ row: 1, externalId: 'c-1', annotation: 'unchanged', outcome: 'unchanged' }]);
    // Digits past the microsecond, rounded as PostgreSQL rounds them: the same instant stored, or another.
    const same = await post(PREVIEW, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('c-1', { timestamp: anHourAgo.replace('Z', '0004Z') })],
    });
    expect(same.body.rows[0].annotation).toBe('unchanged');
    const other = await post(PREVIEW, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('c-1', { timestamp: anHourAgo.replace('Z', '0006Z') })],
    });
    expect(other.body.rows[0].annotation).toBe('conflict');
    expect(await laneRows(tenant.orgId)).toBe(2);
  });

  it('refuses a row imported before with other content as a conflict', async () => {
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('c-1', { resourceName: 'PC-RENAMED' })],
    });
    expect(reply.body.rows).toEqual([
      {
        row: 1,
        externalId: 'c-1',
        annotation: 'conflict',
        outcome: 'refused',
        reason: 'Imported before with other content; the trail is append-only',
      },
    ]);
    expect(await laneRows(tenant.orgId)).toBe(2);
  });

  it('treats the same externalId from another source system as another row', async () => {
    const reply = await post(PREVIEW, tenant.orgToken, { sourceSystem: 'ninjaone', rows: [row('c-1')] });
    expect(reply.body.rows[0]).toMatchObject({ annotation: 'create' });
  });

  it('refuses both rows of a request that share an externalId', async () => {
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('d-1'), row('d-1', { action: 'device.delete' }), row('d-2')],
    });
    expect(reply.body.summary).toEqual({ create: 1, update: 0, unchanged: 0, held: 0, refused: 2 });
    expect(reply.body.rows.slice(0, 2)).toEqual([
      {
        row: 1,
        externalId: 'd-1',
        annotation: 'conflict',
        outcome: 'refused',
        reason: expect.stringContaining('same externalId'),
      },
      {
        row: 2,
        externalId: 'd-1',
        annotation: 'conflict',
        outcome: 'refused',
        reason: expect.stringContaining('same externalId'),
      },
    ]);
    const { rows } = await t.db.admin.query<{ externalId: string }>(
      `SELECT external_id AS "externalId" FROM audit_import_keys WHERE org_id = :orgId::uuid AND external_id LIKE 'd-%'`,
      { orgId: tenant.orgId },
    );
    expect(rows).toEqual([{ externalId: 'd-2' }]);
  });

  it('reports invalid rows with their issues and stores only the valid ones', async () => {
    const before = await laneRows(tenant.orgId);
    const { timestamp: _, ...untimed } = row('i-1');
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [
        untimed,
        row('i-2', { action: 'System.audit.retention' }),
        row('i-3', { timestamp: new Date(Date.now() + 3_600_000).toISOString() }),
        row('i-4', { timestamp: daysAgo(400) }),
        row('i-5', { actorType: 'robot' }),
        row('i-6'),
        // Past what one row may take as JSON (1 MiB), in a body well under the route's 5 MiB.
        row('i-7', { details: { pad: 'x'.repeat(1024 * 1024) } }),
      ],
    });
    expect(reply.status).toBe(200);
    expect(reply.body.summary).toEqual({ create: 1, update: 0, unchanged: 0, held: 0, refused: 6 });
    const [missing, system, future, old, actor, valid, large] = reply.body.rows;
    expect(large).toMatchObject({
      row: 7,
      annotation: 'invalid',
      issues: [{ path: 'details', message: expect.stringContaining('1 MiB') }],
    });
    expect(missing).toMatchObject({ row: 1, externalId: 'i-1', annotation: 'invalid', outcome: 'refused' });
    expect(missing.issues.map((i: { path: string }) => i.path)).toEqual(['timestamp']);
    expect(system).toMatchObject({
      annotation: 'invalid',
      issues: [{ path: 'action', message: expect.stringContaining('system.') }],
    });
    expect(future).toMatchObject({
      annotation: 'invalid',
      issues: [{ path: 'timestamp', message: expect.stringContaining('10 minutes') }],
    });
    expect(old).toMatchObject({
      annotation: 'invalid',
      outcome: 'refused',
      reason: expect.stringContaining('retention of 365 days'),
      issues: [{ path: 'timestamp', message: expect.stringContaining('retention') }],
    });
    expect(actor).toMatchObject({ annotation: 'invalid', issues: [{ path: 'actorType' }] });
    expect(valid).toMatchObject({ row: 6, externalId: 'i-6', annotation: 'create', outcome: 'create' });
    expect(await laneRows(tenant.orgId)).toBe(before + 1);
    const { rows } = await t.db.admin.query<{ externalId: string }>(
      `SELECT external_id AS "externalId" FROM audit_import_keys WHERE org_id = :orgId::uuid AND external_id LIKE 'i-%'`,
      { orgId: tenant.orgId },
    );
    expect(rows).toEqual([{ externalId: 'i-6' }]);
  });

  it('reads CSV rows, details as JSON text, the same as JSON rows', async () => {
    const csv = [
      'External ID,Timestamp,Action,Actor Email,Resource Name,Details,Result',
      `v-1,${minutesAgo(30)},script.run,ops@oldrmm.test,PC-CSV,"{""script"":""cleanup.ps1""}",failure`,
      `v-2,${minutesAgo(29)},script.run,ops@oldrmm.test,PC-CSV,not json,success`,
    ].join('\n');
    const reply = await post(IMPORT, tenant.orgToken, { sourceSystem: 'kaseya', csv });
    expect(reply.status).toBe(200);
    expect(reply.body.rows).toMatchObject([
      { row: 1, externalId: 'v-1', annotation: 'create', outcome: 'create' },
      { row: 2, externalId: 'v-2', annotation: 'invalid', issues: [{ path: 'details' }] },
    ]);
    const found = await search(tenant, 'cleanup.ps1');
    expect(found.body.data).toHaveLength(1);
    expect(found.body.data[0]).toMatchObject({
      id: reply.body.rows[0].entryId,
      action: 'script.run',
      result: 'failure',
      user: { email: 'ops@oldrmm.test' },
      resource: { name: 'PC-CSV' },
      details: { script: 'cleanup.ps1', imported: { sourceSystem: 'kaseya', externalId: 'v-1' } },
    });
    const again = await post(PREVIEW, tenant.orgToken, { sourceSystem: 'kaseya', csv });
    expect(again.body.rows[0]).toMatchObject({ annotation: 'unchanged' });
  });

  it("refuses text PostgreSQL cannot store: a 400 in JSON, an invalid row when a CSV row's details escape it", async () => {
    const before = await laneRows(tenant.orgId);
    const json = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('u-1'), row('u-2', { details: { note: 'a\u0000b' } })],
    });
    expect(json.status).toBe(400);
    expect(JSON.stringify(json.body)).toContain('body.rows.1.details.note');
    expect(await laneRows(tenant.orgId)).toBe(before);
    const csv = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      csv: `externalId,timestamp,action,details\nu-3,${anHourAgo},device.reboot,"{""note"":""a\\u0000b""}"\nu-4,${anHourAgo},device.reboot,"{""note"":""\\ud800""}"\nu-5,${anHourAgo},device.reboot,\n`,
    });
    expect(csv.status).toBe(200);
    expect(csv.body.rows).toMatchObject([
      { row: 1, externalId: 'u-3', annotation: 'invalid', issues: [{ path: 'details' }] },
      { row: 2, externalId: 'u-4', annotation: 'invalid', issues: [{ path: 'details' }] },
      { row: 3, externalId: 'u-5', annotation: 'create' },
    ]);
    expect(await laneRows(tenant.orgId)).toBe(before + 1);
  });

  it('replays the first reply for a repeated Idempotency-Key and stores once', async () => {
    const before = await laneRows(tenant.orgId);
    const summariesBefore = await summaryRows(tenant.orgId);
    const body = { sourceSystem: 'datto', rows: [row('k-1')] };
    const headers = { 'idempotency-key': 'history-import-k-1' };
    const first = await post(IMPORT, tenant.orgToken, body, headers);
    const second = await post(IMPORT, tenant.orgToken, body, headers);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(first.body.rows[0]).toMatchObject({ annotation: 'create', entryId: expect.any(String) });
    expect(await laneRows(tenant.orgId)).toBe(before + 1);
    expect(await summaryRows(tenant.orgId)).toBe(summariesBefore + 1);
  });

  it('imports rows sent by two commits at once only once: the second finds them unchanged', async () => {
    const before = await laneRows(tenant.orgId);
    const body = { sourceSystem: 'datto', rows: [row('r-1'), row('r-2'), row('r-3')] };
    const replies = await Promise.all([post(IMPORT, tenant.orgToken, body), post(IMPORT, tenant.orgToken, body)]);
    expect(replies.map((reply) => reply.status)).toEqual([200, 200]);
    expect(replies.map((reply) => reply.body.summary.create).sort()).toEqual([0, 3]);
    expect(replies.map((reply) => reply.body.summary.unchanged).sort()).toEqual([0, 3]);
    expect(await laneRows(tenant.orgId)).toBe(before + 3);
  });

  it('imports two commits of the same rows in opposite orders once each, whichever waits on the other', async () => {
    const other = await createTenant(t.api, 'Crossed imports');
    const rows = Array.from({ length: 40 }, (_, i) => row(`x-${i}`));
    const replies = await Promise.all([
      post(IMPORT, other.orgToken, { sourceSystem: 'datto', rows }),
      post(IMPORT, other.orgToken, { sourceSystem: 'datto', rows: [...rows].reverse() }),
    ]);
    expect(replies.map((reply) => reply.status)).toEqual([200, 200]);
    // Each row created by exactly one of the two, unchanged in the other.
    const created = replies.flatMap((reply) =>
      reply.body.rows
        .filter((r: { outcome: string }) => r.outcome === 'create')
        .map((r: { externalId: string }) => r.externalId),
    );
    expect(created.sort()).toEqual(rows.map((r) => r.externalId).sort());
    expect(replies[0]!.body.summary.unchanged + replies[1]!.body.summary.unchanged).toBe(40);
    expect(await laneRows(other.orgId)).toBe(40);
    expect(await importKeys(other.orgId)).toBe(40);
    expect(await summaryRows(other.orgId)).toBe(2);
    expect((await verify(other)).body).toMatchObject({ ok: true });
  });

  it('commits disjoint parts of one export side by side, every row created, the chain intact', async () => {
    const other = await createTenant(t.api, 'Parts in flight');
    const parts = [0, 1, 2].map((part) => Array.from({ length: 30 }, (_, i) => row(`p-${part}-${i}`)));
    const replies = await Promise.all(
      parts.map((rows) => post(IMPORT, other.orgToken, { sourceSystem: 'datto', rows })),
    );
    expect(replies.map((reply) => [reply.status, reply.body.summary.create])).toEqual([
      [200, 30],
      [200, 30],
      [200, 30],
    ]);
    expect(await laneRows(other.orgId)).toBe(90);
    expect((await verify(other)).body).toMatchObject({ ok: true });
  });

  it('moves the rows into audit_entries with the job, still found by search, the chain still intact', async () => {
    const waiting = await laneRows(tenant.orgId);
    expect(waiting).toBeGreaterThan(0);
    const properBefore = await entriesProper(tenant.orgId);
    await runHistoryMove(t.db.admin);
    expect(await laneRows(tenant.orgId)).toBe(0);
    expect(await entriesProper(tenant.orgId)).toBe(properBefore + waiting);
    const found = await search(tenant, 'patch window');
    expect(found.body.data.map((e: { id: string }) => e.id)).toContain(entryId);
    expect((await verify(tenant)).body).toMatchObject({ ok: true });
    const preview = await post(PREVIEW, tenant.orgToken, { sourceSystem: 'datto', rows: [row('c-1')] });
    expect(preview.body).toMatchObject({ rows: [{ annotation: 'unchanged' }], waiting: false });
  });
});

describe('an organization without a retention policy', () => {
  it('keeps rows without limit, so it takes rows of any age', async () => {
    const tenant = await createTenant(t.api, 'Unlimited');
    await t.db.admin.query('DELETE FROM audit_retention_policies WHERE org_id = :orgId::uuid', { orgId: tenant.orgId });
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('o-1', { timestamp: '2015-06-01T08:00:00+02:00' })],
    });
    expect(reply.body.rows).toEqual([
      { row: 1, externalId: 'o-1', annotation: 'create', outcome: 'create', entryId: expect.any(String) },
    ]);
    expect(await laneRows(tenant.orgId)).toBe(1);
  });
});

describe('who may import, and into which organization', () => {
  let tenant: Tenant;
  let other: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(t.api, 'Who');
    other = await createTenant(t.api, 'Other');
  });

  it('needs orgId from a partner caller (400 naming body.orgId) and imports into the one it names', async () => {
    const missing = await post(IMPORT, tenant.partnerToken, { sourceSystem: 'datto', rows: [row('w-1')] });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toContain('body.orgId');
    const named = await post(IMPORT, tenant.partnerToken, {
      orgId: tenant.orgId,
      sourceSystem: 'datto',
      rows: [row('w-1')],
    });
    expect(named.status).toBe(200);
    expect(named.body.summary.create).toBe(1);
    expect(await laneRows(tenant.orgId)).toBe(1);
  });

  it("answers 404 Organization for another tenant's organization and stores nothing", async () => {
    for (const token of [tenant.partnerToken, tenant.orgToken]) {
      const reply = await post(PREVIEW, token, { orgId: other.orgId, sourceSystem: 'datto', rows: [row('w-2')] });
      expect(reply.status).toBe(404);
      expect(reply.body.error.message).toBe('Organization not found');
    }
    const reply = await post(IMPORT, tenant.partnerToken, {
      orgId: other.orgId,
      sourceSystem: 'datto',
      rows: [row('w-2')],
    });
    expect(reply.status).toBe(404);
    expect(await laneRows(other.orgId)).toBe(0);
  });

  it('answers 403 to a technician, who lacks audit:manage', async () => {
    const technician = await orgUser(tenant.partnerId, tenant.orgId, 'org_technician');
    const partnerTechnician = await partnerUser(tenant.partnerId, 'partner_technician');
    expect((await post(IMPORT, technician, { sourceSystem: 'datto', rows: [row('w-3')] })).status).toBe(403);
    expect(
      (await post(PREVIEW, partnerTechnician, { orgId: tenant.orgId, sourceSystem: 'datto', rows: [row('w-3')] }))
        .status,
    ).toBe(403);
    expect(await importKeys(tenant.orgId)).toBe(1);
  });

  it("imports with an organization's org_admin API key, recording the key as the importer", async () => {
    const created = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/api-keys`, {
      token: tenant.orgToken,
      body: { name: 'history import', role: 'org_admin' },
    });
    expect(created.status).toBe(201);
    const reply = await t.api.request('POST', IMPORT, {
      headers: { 'x-api-key': created.body.key },
      body: { sourceSystem: 'datto', rows: [row('w-4', { details: { via: 'api key import' } })] },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.rows[0]).toMatchObject({ annotation: 'create', entryId: expect.any(String) });
    const found = await search(tenant, 'api key import');
    expect(found.body.data[0].details.imported.importedBy).toEqual({ actorType: 'api_key', id: created.body.id });
  });

  it('answers 400 naming the field for a malformed body, and stores nothing', async () => {
    const before = await importKeys(tenant.orgId);
    const noSource = await post(IMPORT, tenant.orgToken, { rows: [row('m-1')] });
    expect(noSource.status).toBe(400);
    expect(JSON.stringify(noSource.body)).toContain('body.sourceSystem');
    const tooMany = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: Array.from({ length: 5001 }, (_, i) => ({ externalId: `m-${i}` })),
    });
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.body)).toContain('body.rows');
    const longSource = await post(IMPORT, tenant.orgToken, { sourceSystem: 'x'.repeat(51), rows: [row('m-1')] });
    expect(longSource.status).toBe(400);
    const tooManyCsv = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      csv: ['externalId', ...Array.from({ length: 5001 }, (_, i) => `m-${i}`)].join('\n'),
    });
    expect(tooManyCsv.status).toBe(400);
    expect(JSON.stringify(tooManyCsv.body)).toContain('body.csv');
    expect(await importKeys(tenant.orgId)).toBe(before);
  });

  it('answers 413 for a body over 5 MiB', async () => {
    const reply = await post(IMPORT, tenant.orgToken, {
      sourceSystem: 'datto',
      rows: [row('big', { details: { blob: 'x'.repeat(5 * 1024 * 1024) } })],
    });
    expect(reply.status).toBe(413);
  });
});
