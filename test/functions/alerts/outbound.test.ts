import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attemptDelivery, signature } from '#shared/alerts/psa-delivery.ts';
import { appDb } from '#shared/db/client.ts';
import { useResolver } from '#shared/outbound/address.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, TestConnection } from '#test/support/live-agents.ts';
import { type Receiver, startReceiver } from '#test/support/psa-receiver.ts';
import { scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let receiver: Receiver;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Umbrella');
  receiver = await startReceiver();
});
afterAll(() => receiver.close());
afterEach(() => {
  useResolver();
  delete process.env.OUTBOUND_ALLOW_LOOPBACK;
});

/** Names answered by the stub resolver; any other name does not resolve. */
function resolveNames(answers: Record<string, string[]>) {
  useResolver(async (name) => {
    const addresses = answers[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  });
}

const create = (body: Record<string, unknown>) =>
  t.api.request('POST', '/api/v1/integrations/psa', {
    token: tenant.partnerToken,
    body: { name: 'Autotask', secret: 'a-secret-of-sixteen+', ...body },
  });
const stored = async () =>
  (
    await t.db.admin.query<{ id: string; url: string; secret: string; secretSealed: boolean }>(
      `SELECT id, url, secret, secret_sealed AS "secretSealed" FROM psa_integrations
        WHERE partner_id = :partnerId::uuid ORDER BY created_at`,
      { partnerId: tenant.partnerId },
    )
  ).rows;

const forbidden: [string, string][] = [
  ['https://169.254.169.254/latest/meta-data/', 'link-local address'],
  ['https://[fe80::1]/hook', 'link-local address'],
  ['https://[::ffff:169.254.169.254]/latest/meta-data/', 'link-local address'],
  ['https://[64:ff9b::a9fe:a9fe]/', 'link-local address'],
  ['https://10.1.2.3/hook', 'private address'],
  ['https://172.16.0.9/hook', 'private address'],
  ['https://192.168.0.10/hook', 'private address'],
  ['https://[fd00::5]/hook', 'private address'],
  ['https://[::ffff:10.0.0.1]/hook', 'private address'],
  ['https://100.64.0.1/hook', 'shared address'],
  ['https://127.0.0.1/hook', 'loopback address'],
  ['https://[::1]/hook', 'loopback address'],
  ['https://localhost/hook', 'loopback address'],
  ['http://127.0.0.1:9001/2018-06-01/runtime/invocation/next', 'http:// is only for a loopback address'],
  ['https://0.0.0.0/hook', 'unspecified address'],
  ['https://224.0.0.1/hook', 'multicast address'],
  ['https://255.255.255.255/hook', 'broadcast address'],
  ['https://metadata.google.internal/computeMetadata/v1/', 'internal name'],
  ['https://user:password@psa.example.com/hook', 'credentials in URL'],
  ['https://token@psa.example.com/hook', 'credentials in URL'],
];

describe('PSA URLs at configuration', () => {
  it.each(forbidden)('refuses %s with a 400 naming url and "%s"; nothing stored', async (url, reason) => {
    const reply = await create({ url });
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('VALIDATION_FAILED');
    expect(reply.body.error.details).toContainEqual(
      expect.objectContaining({ path: 'body.url', message: expect.stringContaining(reason) }),
    );
    expect(await stored()).toEqual([]);
  });

  it('refuses a name that resolves inside now, on create and on change', async () => {
    resolveNames({ 'psa.example.com': ['93.184.215.14'], 'inside.example.com': ['10.20.30.40'] });
    const refused = await create({ url: 'https://inside.example.com/hook' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({ path: 'body.url', message: 'Refused URL: private address' }),
    ]);
    const created = await create({ url: 'https://psa.example.com/hook' });
    expect(created.status).toBe(201);
    for (const url of ['https://inside.example.com/hook', 'https://169.254.169.254/', 'https://u:p@psa.example.com/']) {
      const changed = await t.api.request('PATCH', `/api/v1/integrations/psa/${created.body.id}`, {
        token: tenant.partnerToken,
        body: { url },
      });
      expect(changed.status).toBe(400);
      expect(changed.body.error.details[0].path).toBe('body.url');
    }
    expect((await stored()).map((row) => row.url)).toEqual(['https://psa.example.com/hook']);
    await t.api.request('DELETE', `/api/v1/integrations/psa/${created.body.id}`, { token: tenant.partnerToken });
  });

  it('takes http:// to loopback only under the local-development allowance', async () => {
    expect((await create({ url: receiver.url('ok') })).status).toBe(400);
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    const created = await create({ url: receiver.url('ok') });
    expect(created.status).toBe(201);
    await t.api.request('DELETE', `/api/v1/integrations/psa/${created.body.id}`, { token: tenant.partnerToken });
  });
});

describe('PSA secrets', () => {
  it('are sealed at rest; a generated one is shown once, at creation and at rotation, and never audited', async () => {
    resolveNames({ 'psa.example.com': ['93.184.215.14'] });
    const given = await create({ url: 'https://psa.example.com/given' });
    expect(given.status).toBe(201);
    expect(given.body).not.toHaveProperty('secret');
    const generated = await t.api.request('POST', '/api/v1/integrations/psa', {
      token: tenant.partnerToken,
      body: { name: 'Generated', url: 'https://psa.example.com/generated' },
    });
    expect(generated.status).toBe(201);
    expect(generated.body.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const read = await t.api.request('GET', `/api/v1/integrations/psa/${generated.body.id}`, {
      token: tenant.partnerToken,
    });
    expect(read.body).not.toHaveProperty('secret');
    const rotated = await t.api.request('PATCH', `/api/v1/integrations/psa/${generated.body.id}`, {
      token: tenant.partnerToken,
      body: { rotateSecret: true },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated.body.secret).not.toBe(generated.body.secret);
    const both = await t.api.request('PATCH', `/api/v1/integrations/psa/${generated.body.id}`, {
      token: tenant.partnerToken,
      body: { rotateSecret: true, secret: 'another-secret-of-16' },
    });
    expect(both.status).toBe(400);

    const rows = await stored();
    for (const row of rows) {
      expect(row.secretSealed).toBe(true);
      expect(row.secret).toMatch(/^v1\./);
    }
    const raw = JSON.stringify(rows);
    for (const secret of ['a-secret-of-sixteen+', generated.body.secret, rotated.body.secret])
      expect(raw).not.toContain(secret);
    const audit = await t.db.admin.query<{ details: unknown }>(
      `SELECT details FROM audit_logs WHERE resource_type = 'psa_integration' AND resource_id::text IN (SELECT jsonb_array_elements_text(:ids::jsonb))`,
      { ids: rows.map((row) => row.id) },
    );
    expect(audit.rows.length).toBeGreaterThanOrEqual(3);
    const trail = JSON.stringify(audit.rows);
    for (const secret of [
      'a-secret-of-sixteen+',
      generated.body.secret,
      rotated.body.secret,
      ...rows.map((r) => r.secret),
    ])
      expect(trail).not.toContain(secret);
    for (const row of rows)
      await t.api.request('DELETE', `/api/v1/integrations/psa/${row.id}`, { token: tenant.partnerToken });
  });
});

describe('PSA deliveries', () => {
  let deviceId: string;
  let agentToken: string;
  let scriptId: string;
  beforeAll(async () => {
    ({ deviceId, token: agentToken } = await enrollDevice(t.api, tenant, 'outbound-host'));
    const script = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ parameters: [] }), orgId: tenant.orgId },
    });
    scriptId = script.body.id;
  });

  /** Has the device fail the script, which raises an alert delivered to the bound integration. */
  async function raiseAlert(exitCode: number) {
    const agent = await TestConnection.open(t.api, agentToken);
    const run = await t.api.request('POST', `/api/v1/scripts/${scriptId}/runs`, {
      token: tenant.orgToken,
      body: { deviceIds: [deviceId] },
    });
    const { runItemId } = await agent.next();
    agent.send({ runItemId, status: 'finished', exitCode, stdout: '', stderr: '' });
    await eventually(async () => {
      const done = await t.api.request('GET', `/api/v1/script-runs/${run.body.id}`, { token: tenant.orgToken });
      return done.body.done;
    });
    await agent.close();
    // The alert is raised once the run's failure is handled, which may come after the run reads as done.
    let alert: { id: string } | undefined;
    await eventually(async () => {
      const alerts = await t.api.request('GET', `/api/v1/alerts?deviceId=${deviceId}&status=open`, {
        token: tenant.orgToken,
      });
      alert = alerts.body.data[0];
      return alert !== undefined;
    });
    return alert!;
  }
  const deliveriesOf = async (alertId: string) =>
    (await t.api.request('GET', `/api/v1/alerts/${alertId}/deliveries`, { token: tenant.orgToken })).body.data;

  it('re-checks at each delivery: a name that resolves inside after configuration is refused, and logged without a timing', async () => {
    resolveNames({ 'psa.example.com': ['93.184.215.14'] });
    const created = await create({ url: 'https://psa.example.com/hook' });
    expect(created.status).toBe(201);
    await t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/alert-binding`, {
      token: tenant.partnerToken,
      body: { target: 'psa', integrationId: created.body.id },
    });
    // The name now answers the metadata service's address.
    resolveNames({ 'psa.example.com': ['169.254.169.254'] });
    const alert = await raiseAlert(1);
    await eventually(async () => (await deliveriesOf(alert.id))[0]?.attempts === 1);
    const [delivery] = await deliveriesOf(alert.id);
    expect(delivery).toMatchObject({
      status: 'pending',
      lastStatusCode: null,
      lastError: 'refused: link-local address',
      log: [{ statusCode: null, error: 'refused: link-local address', durationMs: null }],
    });
    await t.api.request('POST', `/api/v1/alerts/${alert.id}/resolve`, { token: tenant.orgToken });
    await t.api.request('DELETE', `/api/v1/integrations/psa/${created.body.id}`, { token: tenant.partnerToken });
  });

  it('signs with a secret stored in the clear before secrets were sealed, and seals it on that first read', async () => {
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    const created = await create({ url: receiver.url('ok'), secret: 'legacy-clear-secret-1' });
    await t.db.admin.query(
      `UPDATE psa_integrations SET secret = 'legacy-clear-secret-1', secret_sealed = false WHERE id = :id::uuid`,
      { id: created.body.id },
    );
    await t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/alert-binding`, {
      token: tenant.partnerToken,
      body: { target: 'psa', integrationId: created.body.id },
    });
    await raiseAlert(2);
    const alertId = async () =>
      (await t.api.request('GET', `/api/v1/alerts?deviceId=${deviceId}&status=open`, { token: tenant.orgToken })).body
        .data[0]?.id as string | undefined;
    await eventually(async () => (await alertId()) !== undefined);
    // The first attempt, however long a loaded machine makes it; one that failed on the way (a reset connection, a
    // receiver slower than the answer limit) is attempted again at its due time at once, not a minute later.
    const first = async () => (await deliveriesOf((await alertId())!))[0];
    await eventually(async () => (await first())?.attempts >= 1);
    let delivery = await first();
    for (let again = 0; delivery.status === 'pending' && again < 3; again++) {
      await attemptDelivery(appDb(), delivery.id, new Date(delivery.nextAttemptAt));
      delivery = await first();
    }
    expect(delivery).toMatchObject({ status: 'delivered' });
    const request = receiver.received('ok').at(-1);
    expect(request!.headers['x-logbook-signature']).toBe(
      signature('legacy-clear-secret-1', request!.headers['x-logbook-timestamp']!, request!.body),
    );
    const row = (await stored()).find((r) => r.id === created.body.id)!;
    expect(row.secretSealed).toBe(true);
    expect(row.secret).toMatch(/^v1\./);
  });
});
