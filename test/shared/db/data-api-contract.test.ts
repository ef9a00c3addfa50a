/**
 * The Data API path, tested rather than assumed: the project's stores and handlers run through the Data API
 * executor (shared/db/data-api.ts) and the real @aws-sdk/client-rds-data client against the local Data API endpoint
 * (infra/local/data-api-server.ts), which types parameters and answers as the Data API does.
 */
import { randomUUID } from 'node:crypto';
import {
  BatchExecuteStatementCommand,
  BeginTransactionCommand,
  ExecuteStatementCommand,
  type RDSDataClient,
  RollbackTransactionCommand,
} from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateAnchorKey } from '#shared/audit/anchor-signing.ts';
import { listAuditEntries } from '#shared/audit/query.ts';
import { runRetention } from '#shared/audit/retention.ts';
import { upsertRetentionPolicy } from '#shared/audit/retention-store.ts';
import { type AuditRowInput, insertAuditRows } from '#shared/audit/store.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { closeAppDb } from '#shared/db/client.ts';
import { createDataApiDb, resultTooLargeCode } from '#shared/db/data-api.ts';
import type { Db } from '#shared/db/db.ts';
import { loadMigrations, migrate } from '#shared/db/migrate.ts';
import { createRdsDataClient } from '#shared/db/rds-data-client.ts';
import { toErrorReply } from '#shared/http/error-envelope.ts';
import { localJobsSettled } from '#shared/queue/work-queue.ts';
import { deviceEvent, logEntry, submitEvents, submitLogs } from '#test/support/agents.ts';
import { type Api, startApi } from '#test/support/api.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { platformAdminPrincipal } from '#test/support/principals.ts';
import { createTenant, enrollDevice, platformAdmin, type Tenant } from '#test/support/tenants.ts';

let test: TestDatabase;
let local: LocalDataApi;
let api: Api;
let client: RDSDataClient;
let app: Db;
let tenant: Tenant;

beforeAll(async () => {
  test = await createTestDatabase();
  local = await startLocalDataApi(test);
  // The handlers connect as a Lambda does: shared/db/client.ts builds the Data API executor from these.
  Object.assign(process.env, local.env);
  await closeAppDb();
  api = await startApi();
  client = createRdsDataClient({ endpoint: local.server.url });
  app = local.db('app');
  tenant = await createTenant(api);
});

afterAll(async () => {
  await api?.close();
  await closeAppDb();
  for (const name of Object.keys(local?.env ?? {})) delete process.env[name];
  client?.destroy();
  await local?.close();
  await test?.close();
});

const platform = platformAdminPrincipal();

const auditRow = (orgId: string, overrides: Partial<AuditRowInput> = {}): AuditRowInput => ({
  orgId,
  timestamp: null,
  actorType: 'user',
  actorId: randomUUID(),
  actorEmail: 'tech@example.com',
  action: 'device.update',
  resourceType: 'device',
  resourceId: randomUUID(),
  resourceName: 'web-01',
  details: { changes: { name: { before: 'a', after: 'b' } } },
  ipAddress: '198.51.100.7',
  userAgent: 'vitest',
  result: 'success',
  errorMessage: null,
  ...overrides,
});

/** A statement through the raw client, as the Data API receives it. */
const execute = (
  sql: string,
  parameters: NonNullable<ConstructorParameters<typeof ExecuteStatementCommand>[0]['parameters']> = [],
  extra: Record<string, unknown> = {},
) =>
  client.send(
    new ExecuteStatementCommand({
      resourceArn: local.resourceArn,
      secretArn: local.secretArns.app,
      database: local.database,
      sql,
      parameters,
      ...extra,
    }),
  );

describe('the local Data API endpoint', () => {
  it('types an uncast string as character varying, so a uuid column refuses it as in AWS', async () => {
    const error = await execute('SELECT id FROM organizations WHERE id = :id', [
      { name: 'id', value: { stringValue: tenant.orgId } },
    ]).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'DatabaseErrorException' });
    expect((error as Error).message).toMatch(
      /^ERROR: operator does not exist: uuid = character varying\n {2}Hint: .*\n {2}Position: \d+; SQLState: 42883$/,
    );
  });

  it('accepts the same string with an explicit cast, or with typeHint UUID', async () => {
    const cast = await execute('SELECT id::text AS id FROM organizations WHERE id = :id::uuid', [
      { name: 'id', value: { stringValue: tenant.orgId } },
    ]);
    const hinted = await execute('SELECT id::text AS id FROM organizations WHERE id = :id', [
      { name: 'id', value: { stringValue: tenant.orgId }, typeHint: 'UUID' },
    ]);
    expect(cast.records).toEqual([[{ stringValue: tenant.orgId }]]);
    expect(hinted.records).toEqual(cast.records);
  });

  it('gives each field and typeHint its type', async () => {
    const { records } = await execute(
      `SELECT pg_typeof(:s)::text, pg_typeof(:l)::text, pg_typeof(:d)::text, pg_typeof(:b)::text, pg_typeof(:u)::text, pg_typeof(:j)::text,
              pg_typeof(:ts)::text, pg_typeof(:day)::text, pg_typeof(:dec)::text, :dec * 2 AS doubled`,
      [
        { name: 's', value: { stringValue: 'x' } },
        { name: 'l', value: { longValue: 1 } },
        { name: 'd', value: { doubleValue: 1.5 } },
        { name: 'b', value: { booleanValue: true } },
        { name: 'u', value: { stringValue: randomUUID() }, typeHint: 'UUID' },
        { name: 'j', value: { stringValue: '{"a":1}' }, typeHint: 'JSON' },
        { name: 'ts', value: { stringValue: '2026-03-01 10:00:00.123' }, typeHint: 'TIMESTAMP' },
        { name: 'day', value: { stringValue: '2026-03-01' }, typeHint: 'DATE' },
        { name: 'dec', value: { stringValue: '12.345' }, typeHint: 'DECIMAL' },
      ],
    );
    expect(records![0]!.map((field) => field.stringValue)).toEqual([
      'character varying',
      'bigint',
      'double precision',
      'boolean',
      'uuid',
      'json',
      'timestamp without time zone',
      'date',
      'numeric',
      '24.690',
    ]);
  });

  it('returns typed records with column metadata, or the records formatted as JSON', async () => {
    const sql = `SELECT 7::int AS n, 'x'::text AS t, true AS b, NULL::text AS z, '2026-03-01 10:00:00.5+00'::timestamptz AS at`;
    const typed = await execute(sql, [], { includeResultMetadata: true });
    expect(typed.records).toEqual([
      [
        { longValue: 7 },
        { stringValue: 'x' },
        { booleanValue: true },
        { isNull: true },
        { stringValue: '2026-03-01 10:00:00.5' },
      ],
    ]);
    expect(typed.columnMetadata!.map((c) => [c.label, c.typeName])).toEqual([
      ['n', 'int4'],
      ['t', 'text'],
      ['b', 'bool'],
      ['z', 'text'],
      ['at', 'timestamptz'],
    ]);
    const formatted = await execute(sql, [], { formatRecordsAs: 'JSON' });
    expect(formatted.records).toBeUndefined();
    expect(JSON.parse(formatted.formattedRecords!)).toEqual([
      { n: 7, t: 'x', b: true, z: null, at: '2026-03-01 10:00:00.5' },
    ]);
  });

  it('runs one statement per call', async () => {
    await expect(execute('SELECT 1; SELECT 2')).rejects.toMatchObject({
      name: 'DatabaseErrorException',
      message: expect.stringContaining('SQLState: 42601'),
    });
  });

  it('refuses a second statement while one of the same transaction runs', async () => {
    const { transactionId } = await client.send(
      new BeginTransactionCommand({
        resourceArn: local.resourceArn,
        secretArn: local.secretArns.app,
        database: local.database,
      }),
    );
    const results = await Promise.allSettled([
      execute('SELECT pg_sleep(0.3)', [], { transactionId }),
      execute('SELECT 1', [], { transactionId }),
    ]);
    await client.send(
      new RollbackTransactionCommand({
        resourceArn: local.resourceArn,
        secretArn: local.secretArns.app,
        transactionId,
      }),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({
      name: 'DatabaseErrorException',
      message: 'Transaction is still running a query',
    });
  });

  it('refuses a response above 1 MiB, and the transaction it ran in is gone', async () => {
    const { transactionId } = await client.send(
      new BeginTransactionCommand({
        resourceArn: local.resourceArn,
        secretArn: local.secretArns.app,
        database: local.database,
      }),
    );
    await expect(
      execute(`SELECT repeat('x', 60000) AS big FROM generate_series(1, 20)`, [], { transactionId }),
    ).rejects.toMatchObject({
      name: 'BadRequestException',
      message: 'Database returned more than the allowed response size limit',
    });
    await expect(execute('SELECT 1', [], { transactionId })).rejects.toMatchObject({
      name: 'TransactionNotFoundException',
    });
  });

  it('runs a batch statement over parameter sets, all or nothing', async () => {
    const name = `batch_${randomUUID().slice(0, 8)}`;
    await local.db('admin').query(`CREATE TABLE ${name} (id uuid PRIMARY KEY, label text NOT NULL)`);
    const batch = (ids: string[]) =>
      client.send(
        new BatchExecuteStatementCommand({
          resourceArn: local.resourceArn,
          secretArn: local.secretArns.admin,
          database: local.database,
          sql: `INSERT INTO ${name} (id, label) VALUES (:id::uuid, :label) RETURNING id::text`,
          parameterSets: ids.map((id) => [
            { name: 'id', value: { stringValue: id } },
            { name: 'label', value: { stringValue: `row ${id}` } },
          ]),
        }),
      );
    const ids = [randomUUID(), randomUUID()];
    const { updateResults } = await batch(ids);
    expect(updateResults!.map((r) => r.generatedFields)).toEqual(ids.map((id) => [{ stringValue: id }]));
    await expect(batch([randomUUID(), ids[0]!])).rejects.toMatchObject({
      message: expect.stringContaining('SQLState: 23505'),
    });
    expect((await local.db('admin').query(`SELECT count(*) AS n FROM ${name}`)).rows).toEqual([{ n: 2 }]);
  });
});

describe('the Data API executor', () => {
  it('returns the values node-postgres returns, column type by column type', async () => {
    const sql = `SELECT :at::timestamptz AS at, '{"a":[1,{"b":null}]}'::jsonb AS doc, '[1,2]'::json AS list, 2147483647::int4 AS int,
                        9007199254740991::int8 AS big, count(*) AS counted, 12.50::numeric AS amount, :id::uuid AS id, 'x'::text AS text,
                        'ab'::char(3) AS fixed, false AS flag, NULL::jsonb AS nothing, 1.5::float8 AS ratio, ARRAY['a','b'] AS tags,
                        :n::int + 1 AS next, :flag::boolean AS given, :doc::jsonb AS echoed, 'user'::audit_actor_type AS actor
                   FROM (VALUES (1)) v`;
    const params = {
      at: new Date('2026-03-01T10:00:00.123Z'),
      id: randomUUID(),
      n: 41,
      flag: true,
      doc: { nested: ['x', 1, null] },
    };
    const [viaDataApi, viaPg] = await Promise.all([app.query(sql, params), test.admin.query(sql, params)]);
    expect(viaDataApi.rows).toEqual(viaPg.rows);
    expect(viaDataApi.rows[0]!.at).toBeInstanceOf(Date);
  });

  it('counts the rows a write without RETURNING changed', async () => {
    const { rowCount } = await app.query(`UPDATE organizations SET name = name WHERE id = :id::uuid`, {
      id: tenant.orgId,
    });
    expect(rowCount).toBe(1);
  });

  it("keeps a statement's SQLSTATE, so errors map to the same replies as with node-postgres", async () => {
    const error = await local
      .db('admin')
      .query(`INSERT INTO partners (id, name) SELECT id, name FROM partners WHERE id = :id::uuid`, {
        id: tenant.partnerId,
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'DataApiError', code: '23505' });
    const unstorable = await app.query(`SELECT convert_from('\\x00'::bytea, 'UTF8')`).catch((e: unknown) => e);
    expect(unstorable).toMatchObject({ code: '22021' });
    expect(toErrorReply(unstorable)).toMatchObject({ statusCode: 400 });
  });

  it("sets the transaction's isolation level with its first statement", async () => {
    const level = await app.transaction(
      async (tx) =>
        (await tx.query<{ level: string }>(`SELECT current_setting('transaction_isolation') AS level`)).rows[0]!.level,
      { isolation: 'REPEATABLE READ' },
    );
    expect(level).toBe('repeatable read');
  });

  it('lets the statements of one transaction take turns when they are issued together', async () => {
    const values = await app.transaction((tx) =>
      Promise.all(
        [1, 2, 3].map(
          async (n) => (await tx.query<{ n: number }>('SELECT :n::int AS n, pg_sleep(0.05)', { n })).rows[0]!.n,
        ),
      ),
    );
    expect(values).toEqual([1, 2, 3]);
  });

  it('rolls back the transaction when its function throws', async () => {
    const name = `Rolled back ${randomUUID()}`;
    await expect(
      app.transaction(async (tx) => {
        await tx.query('UPDATE organizations SET name = :name::text WHERE id = :id::uuid', { name, id: tenant.orgId });
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(
      (await app.query('SELECT count(*) AS n FROM organizations WHERE name = :name::text', { name })).rows,
    ).toEqual([{ n: 0 }]);
  });

  it('retries DatabaseResumingException while the cluster resumes from 0 ACU', async () => {
    const waits: number[] = [];
    const db = local.db('app', { sleep: async (ms) => void waits.push(ms) });
    local.server.pause({ calls: 3 });
    const before = local.server.calls.length;
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(local.server.calls.slice(before).map((c) => c.operation)).toEqual([
      'Execute',
      'Execute',
      'Execute',
      'Execute',
    ]);
    expect(waits).toEqual([500, 1000, 2000]);
  });

  it('gives up at its deadline with an error the API answers as 503 UNAVAILABLE', async () => {
    const db = local.db('app', { resumeDeadlineMs: 1_200 });
    local.server.pause({ ms: 5_000 });
    try {
      const error = await db.transaction(async () => undefined).catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: 'DataApiError',
        code: '57P03',
        message: expect.stringContaining('is resuming after being auto-paused'),
      });
      expect(toErrorReply(error)).toMatchObject({ statusCode: 503 });
    } finally {
      local.server.pause({});
    }
  });

  it("names a result above the Data API's 1 MiB limit as such", async () => {
    const error = await app
      .query(`SELECT repeat('x', 30000) AS a, repeat('y', 30000) AS b FROM generate_series(1, 20)`)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: resultTooLargeCode, message: expect.stringContaining('1 MiB') });
  });

  it("names a row above the Data API's 64 KB row limit as such, however small the result", async () => {
    const error = await app.query(`SELECT repeat('x', 40000) AS a, repeat('y', 40000) AS b`).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: resultTooLargeCode, message: expect.stringContaining('64 KB') });
    expect(await app.query(`SELECT repeat('x', 30000) AS a, repeat('y', 30000) AS b`)).toMatchObject({
      rows: [{ a: expect.any(String) }],
    });
  });

  it('sends only the real parameters: a :name inside a string literal, quoted identifier, comment or dollar quote is text', async () => {
    const sql = `SELECT to_char(:at::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS formatted, -- :commented
                        ':notParam' AS literal, E'it\\'s :escaped' AS escaped, $$:dollar$$ AS dollar, $tag$ :tagged $tag$ AS tagged,
                        /* :block */ 'a''b:c' AS doubled, 1 AS ":ident", :n::int AS n`;
    const params = { at: new Date('2026-03-01T10:04:05Z'), n: 7 };
    const sent: { name?: string }[][] = [];
    const spy = createRdsDataClient({ endpoint: local.server.url });
    spy.middlewareStack.add((next) => async (args) => {
      sent.push(((args.input as { parameters?: { name?: string }[] }).parameters ?? []).map(({ name }) => ({ name })));
      return next(args);
    });
    const db = createDataApiDb({
      client: spy,
      resourceArn: local.resourceArn,
      secretArn: local.secretArns.app,
      database: local.database,
    });
    try {
      const [viaDataApi, viaPg] = await Promise.all([db.query(sql, params), test.admin.query(sql, params)]);
      expect(viaDataApi.rows).toEqual([
        {
          formatted: '2026-03-01T10:04:05',
          literal: ':notParam',
          escaped: "it's :escaped",
          dollar: ':dollar',
          tagged: ' :tagged ',
          doubled: "a'b:c",
          ':ident': 1,
          n: 7,
        },
      ]);
      expect(viaDataApi.rows).toEqual(viaPg.rows);
      expect(sent).toEqual([[{ name: 'at' }, { name: 'n' }]]);
    } finally {
      await db.close();
    }
  });

  it('refuses to send a statement without a value for one of its parameters', async () => {
    await expect(app.query('SELECT :missing::text')).rejects.toThrow('missing SQL parameter :missing');
  });
});

describe('migrations through the Data API', () => {
  it('migrate a fresh database one statement per call, then find nothing to apply', async () => {
    const name = `${test.name}_fresh`;
    await test.admin.query(`CREATE DATABASE ${name}`);
    const admin = local.db('admin', { database: name });
    try {
      const before = local.server.calls.length;
      expect(await migrate(admin)).toEqual(loadMigrations().map((m) => m.name));
      const sent = new Set(local.server.calls.slice(before).map((c) => c.sql));
      for (const statement of loadMigrations().flatMap((m) => m.statements)) expect(sent.has(statement)).toBe(true);
      expect(await migrate(admin)).toEqual([]);
    } finally {
      await admin.close();
      await test.admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    }
  });
});

describe('the stores through the Data API', () => {
  it('write audit rows, list them and verify the chain (in a REPEATABLE READ transaction)', async () => {
    const other = await createTenant(api, 'Globex');
    const sealed = await insertAuditRows(app, [
      auditRow(tenant.orgId),
      auditRow(other.orgId),
      auditRow(tenant.orgId, { action: 'device.delete', details: { text: 'ünïcødé ✓', n: 1.5 } }),
    ]);
    expect(sealed.map((row) => typeof row.pos)).toEqual(['number', 'number', 'number']);

    const listed = await listAuditEntries(app, platform, { page: 1, limit: 50, skipCount: false, orgId: tenant.orgId });
    const viaPg = await listAuditEntries(test.admin, platform, {
      page: 1,
      limit: 50,
      skipCount: false,
      orgId: tenant.orgId,
    });
    expect(listed).toEqual(viaPg);
    expect(listed.rows.map((row) => row.action)).toEqual(expect.arrayContaining(['device.update', 'device.delete']));

    expect(await verifyChain(app, tenant.orgId)).toEqual(await verifyChain(test.admin, tenant.orgId));
    expect(await verifyChain(app, tenant.orgId, { pageRows: 1 })).toMatchObject({
      ok: true,
      checked: listed.pagination.total,
    });
  });

  it('verify a chain larger than one 1 MiB response in pages under it', async () => {
    const big = await createTenant(api, 'Umbrella');
    const note = 'x'.repeat(60_000);
    await insertAuditRows(
      app,
      Array.from({ length: 40 }, (_, n) => auditRow(big.orgId, { details: { note, n } })),
    );
    const before = local.server.calls.length;
    expect(await verifyChain(app, big.orgId)).toEqual({ ok: true, checked: 40 });
    // Each page's entries are read in a statement of their own, cut under the response limit.
    expect(
      local.server.calls.slice(before).filter((c) => c.sql?.includes('FROM audit_entries a')).length,
    ).toBeGreaterThan(2);
  });

  it('delete expired audit rows as the retention role, with the session flag set inside the transaction', async () => {
    const pruned = await createTenant(api, 'Initech');
    await upsertRetentionPolicy(app, pruned.orgId, 30);
    const old = new Date(Date.now() - 90 * 86_400_000).toISOString();
    await insertAuditRows(app, [
      auditRow(pruned.orgId, { timestamp: old }),
      auditRow(pruned.orgId, { timestamp: old }),
    ]);
    await insertAuditRows(app, [auditRow(pruned.orgId)]);
    const auditAdmin = local.db('auditAdmin');

    // Each call outside a transaction is a transaction of its own: a flag set by one is gone for the next.
    await auditAdmin.query(`SET LOCAL logbook.audit_retention = 'on'`);
    await expect(
      auditAdmin.query('DELETE FROM audit_chain_links WHERE org_id = :orgId::uuid', { orgId: pruned.orgId }),
    ).rejects.toMatchObject({ name: 'DataApiError' });

    const run = await runRetention(auditAdmin, { batchRows: 1, anchorKey: generateAnchorKey(), integrityWatch: false });
    expect(run.organizations.find((org) => org.orgId === pruned.orgId)).toMatchObject({
      rowsDeleted: 2,
      fromSeq: 1,
      throughSeq: 2,
    });
    expect(await verifyChain(app, pruned.orgId)).toMatchObject({ ok: true });
  });
});

describe('the API on the Data API', () => {
  it('bills an organization whose usage statement is many times one 64 KB row, in pages: 1,100 devices, each counted', async () => {
    const billed = await createTenant(api, 'Billed');
    await test.admin.query(
      `INSERT INTO devices (org_id, site_id, hostname, os_type, os_version, created_at)
       SELECT :orgId::uuid, :siteId::uuid, 'billed-' || lpad(n::text, 4, '0'), 'windows', 'Windows 11',
              '2024-01-01T00:00:00Z'::timestamptz
         FROM generate_series(1, 1100) AS n`,
      { orgId: billed.orgId, siteId: billed.siteId },
    );
    const token = billed.partnerToken;
    const contract = await api.request('POST', `/api/v1/orgs/organizations/${billed.orgId}/contracts`, {
      token,
      body: {
        currency: 'EUR',
        startDate: '2024-01-31',
        intervalMonths: 1,
        billing: 'arrears',
        timezone: 'Europe/Berlin',
        paymentTermsDays: 30,
        autoRenew: false,
        autoIssue: false,
        taxRatePercent: '0',
        lines: [{ type: 'per-device', description: 'Managed devices', unitPrice: '4.00' }],
      },
    });
    expect(contract.status, JSON.stringify(contract.body)).toBe(201);
    const invoice = await api.request('POST', `/api/v1/contracts/${contract.body.id}/invoices`, {
      token,
      body: { periodStart: '2024-01-31' },
    });
    expect(invoice.status, JSON.stringify(invoice.body)).toBeLessThan(300);
    expect(invoice.body.total).toBe('4400.00');
    const usage = await api.request('GET', `/api/v1/invoices/${invoice.body.id}/usage-statement`, { token });
    expect(usage.status).toBe(200);
    expect(usage.body.devices).toHaveLength(1100);
    expect(usage.body.devices[1099]).toMatchObject({ hostname: 'billed-1100', days: 29 });
    expect(usage.body.deviceDays).toBe(1100 * 29);
    expect(new Set(usage.body.devices.map((d: { deviceId: string }) => d.deviceId)).size).toBe(1100);
  });

  it('creates and lists the hierarchy', async () => {
    const listed = await api.request('GET', '/api/v1/orgs/organizations', { token: tenant.partnerToken });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((org: { id: string }) => org.id)).toContain(tenant.orgId);
    const partners = await api.request('GET', '/api/v1/partners', { token: await platformAdmin() });
    expect(partners.body.data.map((partner: { id: string }) => partner.id)).toContain(tenant.partnerId);
  });

  it('stores 250 diagnostic log entries in batches of 100 and pages through them', async () => {
    const agent = await enrollDevice(api, tenant, 'logs-01');
    const before = local.server.calls.length;
    const stored = await submitLogs(
      api,
      agent,
      Array.from({ length: 250 }, (_, n) => logEntry(n)),
    );
    expect(stored).toMatchObject({ status: 201, body: { received: 250 } });
    expect(local.server.calls.slice(before).filter((c) => c.sql?.includes('INSERT INTO agent_logs'))).toHaveLength(3);
    const page = await api.request('GET', `/api/v1/devices/${agent.deviceId}/diagnostic-logs?limit=100&page=3`, {
      token: tenant.orgToken,
    });
    expect(page.body.pagination).toMatchObject({ total: 250 });
    expect(page.body.data).toHaveLength(50);
  });

  it('stores a keyed upload in two Data API calls, the token lookup and one statement, and answers its resend in one', async () => {
    const agent = await enrollDevice(api, tenant, 'logs-keyed');
    // The first upload of the process may also ask, once a minute, whether any audit stream exists.
    expect((await submitLogs(api, agent, [logEntry(0)])).status).toBe(201);
    const logs = Array.from({ length: 150 }, (_, n) => logEntry(n));
    const headers = { 'idempotency-key': 'upload-calls' };
    await localJobsSettled();
    const before = local.server.calls.length;
    expect(await submitLogs(api, agent, logs, { headers })).toMatchObject({ status: 201, body: { received: 150 } });
    expect(local.server.calls.slice(before).map((c) => c.operation)).toEqual(['Execute', 'Execute']);
    const resent = local.server.calls.length;
    expect(await submitLogs(api, agent, logs, { headers })).toMatchObject({ status: 201, body: { received: 150 } });
    expect(local.server.calls.slice(resent).map((c) => c.operation)).toEqual(['Execute']);
  });

  it('stores device events once: a resubmission counts no duplicate', async () => {
    const agent = await enrollDevice(api, tenant, 'events-01');
    const events = Array.from({ length: 150 }, (_, n) => deviceEvent(n));
    expect(await submitEvents(api, agent, events)).toMatchObject({ status: 200, body: { success: true, count: 150 } });
    expect(await submitEvents(api, agent, [...events, deviceEvent(1000)])).toMatchObject({
      status: 200,
      body: { success: true, count: 1 },
    });
  });

  it('takes reported audit events, lists them and verifies the chain', async () => {
    const root = await platformAdmin();
    const reported = await api.request('POST', '/api/v1/audit-logs/events', {
      token: root,
      body: {
        events: [
          {
            orgId: tenant.orgId,
            actorType: 'system',
            actorId: randomUUID(),
            action: 'script.execute',
            resourceType: 'script',
            details: { exitCode: 0 },
          },
        ],
      },
    });
    expect(reported.status).toBe(201);
    const listed = await api.request('GET', `/api/v1/audit-logs/logs?orgId=${tenant.orgId}&action=script.execute`, {
      token: root,
    });
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        id: reported.body.ids[0],
        action: 'script.execute',
        details: expect.objectContaining({ exitCode: 0, reportedBy: expect.any(Object) }),
      }),
    ]);
    const verified = await api.request('GET', `/api/v1/audit-logs/verify?orgId=${tenant.orgId}`, { token: root });
    expect(verified.body).toMatchObject({ ok: true });
  });

  it("imports another system's audit history into the lane, matches it again by its keys, and verifies the chain", async () => {
    const root = await platformAdmin();
    const timestamp = new Date(Date.now() - 3_600_000).toISOString();
    const body = {
      orgId: tenant.orgId,
      sourceSystem: 'datto',
      rows: [
        {
          externalId: 'dh-1',
          timestamp,
          action: 'device.reboot',
          actorId: 'tech-1',
          details: { via: 'data api import' },
        },
        { externalId: 'dh-2', timestamp, action: 'device.reboot', resourceId: 'dev-9' },
      ],
    };
    const imported = await api.request('POST', '/api/v1/audit-logs/import', { token: root, body });
    expect(imported.status).toBe(200);
    expect(imported.body).toMatchObject({ summary: { create: 2 }, waiting: true });
    const again = await api.request('POST', '/api/v1/audit-logs/import/preview', { token: root, body });
    expect(again.body).toMatchObject({ summary: { unchanged: 2 }, waiting: expect.any(Boolean) });
    const found = await api.request('GET', `/api/v1/audit-logs/search?orgId=${tenant.orgId}&q=data%20api%20import`, {
      token: root,
    });
    expect(found.body.data).toEqual([expect.objectContaining({ id: imported.body.rows[0].entryId })]);
    const verified = await api.request('GET', `/api/v1/audit-logs/verify?orgId=${tenant.orgId}`, { token: root });
    expect(verified.body).toMatchObject({ ok: true });
  });
});
