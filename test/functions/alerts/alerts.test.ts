import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { attemptDelivery, retryDelaysSeconds, signature } from '#shared/alerts/psa-delivery.ts';
import { appDb } from '#shared/db/client.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, TestConnection } from '#test/support/live-agents.ts';
import { type Receiver, startReceiver } from '#test/support/psa-receiver.ts';
import { auditRowsOf, scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

// A generous limit for a loopback receiver on a loaded machine; the test of a receiver that never answers sets a short one.
const deliveryTimeoutMs = '30000';
process.env.PSA_DELIVERY_TIMEOUT_MS = deliveryTimeoutMs;
// The receiver listens on 127.0.0.1: the local-development allowance for loopback destinations.
process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let scriptId: string;
let receiver: Receiver;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  receiver = await startReceiver();
  const created = await t.api.request('POST', '/api/v1/scripts', {
    token: tenant.orgToken,
    body: {
      ...scriptBody({
        name: 'Health check',
        parameters: [],
        exitCodeSeverityMapping: { '2': 'critical', '3': 'none' },
      }),
      orgId: tenant.orgId,
    },
  });
  scriptId = created.body.id;
});
afterAll(() => receiver.close());

/** Runs the script on the device and has its agent finish with the exit code; returns the run item id. */
async function runWithExit(token: string, exitCode: number, id = scriptId, device = { deviceId, token: agentToken }) {
  const agent = await TestConnection.open(t.api, device.token);
  const run = await t.api.request('POST', `/api/v1/scripts/${id}/runs`, {
    token,
    body: { deviceIds: [device.deviceId] },
  });
  const { runItemId } = await agent.next();
  agent.send({ runItemId, status: 'finished', exitCode, stdout: '', stderr: '' });
  await eventually(async () => {
    const run_ = await t.api.request('GET', `/api/v1/script-runs/${run.body.id}`, { token });
    return run_.body.done;
  });
  await agent.close();
  return runItemId as string;
}

let deviceId: string;
let agentToken: string;
const alertsOf = async (token = tenant.orgToken, query = '') =>
  (await t.api.request('GET', `/api/v1/alerts?deviceId=${deviceId}${query}`, { token })).body;

describe('alerts from exit codes', () => {
  beforeAll(async () => {
    const device = await enrollDevice(t.api, tenant, 'alerting-host');
    deviceId = device.deviceId;
    agentToken = device.token;
  });

  it('exit 0 and a code mapped to none raise nothing', async () => {
    await runWithExit(tenant.orgToken, 0);
    await runWithExit(tenant.orgToken, 3);
    expect((await alertsOf()).data).toEqual([]);
  });

  it('an unmapped non-zero code raises a medium alert with a ticket; a repeat counts on the open alert', async () => {
    const first = await runWithExit(tenant.orgToken, 1);
    // The alert and its ticket follow the item's answer.
    await eventually(async () => (await alertsOf()).data[0]?.binding.target === 'tickets');
    const page = await alertsOf();
    expect(page.data).toHaveLength(1);
    const alert = page.data[0];
    expect(alert).toMatchObject({
      severity: 'medium',
      status: 'open',
      occurrences: 1,
      deviceId,
      source: { type: 'script', id: first },
      binding: { target: 'tickets', integrationId: null },
    });
    expect((await auditRowsOf(t.db.admin, 'alert.create', alert.id))[0]).toMatchObject({ actorType: 'system' });
    const ticket = await t.api.request('GET', `/api/v1/tickets/${alert.binding.ticketId}`, { token: tenant.orgToken });
    expect(ticket.body).toMatchObject({ number: 1, status: 'open', alertIds: [alert.id] });
    routes['GET /api/v1/tickets/{ticketId}'].response.parse(ticket.body);
    // The ticket is audited with the alert, in the same change: alert.create, then ticket.create.
    await eventually(async () => (await auditRowsOf(t.db.admin, 'ticket.create', alert.binding.ticketId)).length > 0);
    expect(await auditRowsOf(t.db.admin, 'ticket.create', alert.binding.ticketId)).toMatchObject([
      { orgId: tenant.orgId, actorType: 'system', details: { alertId: alert.id, title: alert.title } },
    ]);
    const { rows: trail } = await t.db.admin.query<{ action: string; resourceName: string }>(
      `SELECT action, resource_name AS "resourceName" FROM audit_logs
        WHERE resource_id IN (:alertId::uuid, :ticketId::uuid) AND action LIKE '%.create' ORDER BY seq`,
      { alertId: alert.id, ticketId: alert.binding.ticketId },
    );
    expect(trail).toEqual([
      { action: 'alert.create', resourceName: alert.title },
      { action: 'ticket.create', resourceName: '#1' },
    ]);

    const second = await runWithExit(tenant.orgToken, 1);
    await eventually(async () => (await alertsOf()).data[0]?.occurrences === 2);
    const again = await alertsOf();
    expect(again.data).toHaveLength(1);
    expect(again.data[0]).toMatchObject({ id: alert.id, occurrences: 2, source: { id: first, lastId: second } });
    expect(await auditRowsOf(t.db.admin, 'alert.create', alert.id)).toHaveLength(1);
  });

  it('acknowledges (alert.acknowledge), resolves (closing its ticket), and then opens a new alert on the next failure', async () => {
    const [alert] = (await alertsOf(tenant.orgToken, '&status=open')).data;
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('POST', `/api/v1/alerts/${alert.id}/acknowledge`, { token: viewer })).status).toBe(403);
    expect(
      (await t.api.request('POST', `/api/v1/alerts/${alert.id}/acknowledge`, { token: other.orgToken })).status,
    ).toBe(404);
    const acked = await t.api.request('POST', `/api/v1/alerts/${alert.id}/acknowledge`, { token: tenant.orgToken });
    expect(acked.body).toMatchObject({ status: 'acknowledged', acknowledgedBy: { actorType: 'user' } });
    expect(
      (await t.api.request('POST', `/api/v1/alerts/${alert.id}/acknowledge`, { token: tenant.orgToken })).status,
    ).toBe(409);
    expect((await auditRowsOf(t.db.admin, 'alert.acknowledge', alert.id))[0]).toMatchObject({
      details: { before: { status: 'open' }, after: { status: 'acknowledged' } },
    });
    const resolved = await t.api.request('POST', `/api/v1/alerts/${alert.id}/resolve`, { token: tenant.orgToken });
    expect(resolved.body.status).toBe('resolved');
    const ticket = await t.api.request('GET', `/api/v1/tickets/${alert.binding.ticketId}`, { token: tenant.orgToken });
    expect(ticket.body.status).toBe('closed');
    expect(await auditRowsOf(t.db.admin, 'ticket.close', alert.binding.ticketId)).toHaveLength(1);
    const closed = await t.api.request('GET', '/api/v1/tickets?status=closed', { token: tenant.orgToken });
    expect(closed.body.data).toEqual([ticket.body]);
    expect(ticket.body.closedAt).not.toBeNull();

    await runWithExit(tenant.orgToken, 2);
    await eventually(
      async () => (await alertsOf(tenant.orgToken, '&status=open')).data[0]?.binding.target === 'tickets',
    );
    const open = (await alertsOf(tenant.orgToken, '&status=open')).data;
    expect(open).toMatchObject([{ severity: 'critical', occurrences: 1 }]);
    expect(open[0].id).not.toBe(alert.id);
    expect((await alertsOf(tenant.orgToken, '&severity=critical')).pagination).toMatchObject({
      total: 1,
      totalExact: true,
    });
    expect((await t.api.request('GET', `/api/v1/alerts/${alert.id}`, { token: other.partnerToken })).status).toBe(404);
  });

  it("filters by site: the alerts of the site's devices, none of another site's, nothing through another tenant", async () => {
    const bySite = async (siteId: string, token = tenant.orgToken) =>
      (await t.api.request('GET', `/api/v1/alerts?siteId=${siteId}`, { token })).body;
    const all = (await alertsOf()).data.map((alert: { id: string }) => alert.id);
    expect(all.length).toBeGreaterThan(0);
    expect((await bySite(tenant.siteId)).data.map((alert: { id: string }) => alert.id)).toEqual(all);
    const branch = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
      token: tenant.orgToken,
      body: { name: 'Branch office' },
    });
    expect(branch.status).toBe(201);
    expect((await bySite(branch.body.id)).data).toEqual([]);
    expect((await bySite(tenant.siteId, other.partnerToken)).data).toEqual([]);
    const refused = await t.api.request('GET', '/api/v1/alerts?siteId=not-a-uuid', { token: tenant.orgToken });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('siteId');
  });
});

describe('PSA binding', () => {
  let psaTenant: Tenant;
  let integrationId: string;
  let psaScript: string;
  beforeAll(async () => {
    psaTenant = await createTenant(t.api, 'Initech');
    const device = await enrollDevice(t.api, psaTenant, 'psa-host');
    deviceId = device.deviceId;
    agentToken = device.token;
    const script = await t.api.request('POST', '/api/v1/scripts', {
      token: psaTenant.orgToken,
      body: { ...scriptBody({ parameters: [], exitCodeSeverityMapping: { '4': 'low' } }), orgId: psaTenant.orgId },
    });
    psaScript = script.body.id;
  });

  const createIntegration = (url: string, severities = ['medium', 'high', 'critical']) =>
    t.api.request('POST', '/api/v1/integrations/psa', {
      token: psaTenant.partnerToken,
      body: { name: 'Autotask', url, secret: 'a-secret-of-sixteen+', severities },
    });

  it('accepts https, and http only to loopback; organization users do not manage integrations', async () => {
    expect((await createIntegration('http://psa.example.com/hook')).status).toBe(400);
    expect((await createIntegration('https://psa.example.com/hook')).status).toBe(201);
    const org = await t.api.request('POST', '/api/v1/integrations/psa', {
      token: psaTenant.orgToken,
      body: { name: 'x', url: 'https://psa.example.com', secret: 'a-secret-of-sixteen+' },
    });
    expect(org.status).toBe(403);
  });

  it('delivers a signed alert.created event and keeps the ticket id of the answer', async () => {
    const created = await createIntegration(receiver.url('ok'));
    integrationId = created.body.id;
    expect(created.body).not.toHaveProperty('secret');
    const read = await t.api.request('GET', `/api/v1/integrations/psa/${integrationId}`, {
      token: psaTenant.partnerToken,
    });
    expect(read.body).toEqual(created.body);
    const listed = await t.api.request('GET', '/api/v1/integrations/psa', { token: psaTenant.partnerToken });
    expect(listed.body.data).toContainEqual(created.body);
    const bound = await t.api.request('PUT', `/api/v1/orgs/organizations/${psaTenant.orgId}/alert-binding`, {
      token: psaTenant.partnerToken,
      body: { target: 'psa', integrationId },
    });
    expect(bound.body).toEqual({ target: 'psa', integrationId, inherited: false });
    await runWithExit(psaTenant.orgToken, 1, psaScript);
    await eventually(() => receiver.received('ok').length === 1);
    const [request] = receiver.received('ok');
    const body = JSON.parse(request!.body);
    expect(body).toMatchObject({ event: 'alert.created', alert: { severity: 'medium', status: 'open' } });
    expect(request!.headers['x-logbook-signature']).toBe(
      signature('a-secret-of-sixteen+', request!.headers['x-logbook-timestamp']!, request!.body),
    );
    const alert = (await alertsOf(psaTenant.orgToken)).data[0];
    await eventually(async () => {
      const one = await t.api.request('GET', `/api/v1/alerts/${alert.id}`, { token: psaTenant.orgToken });
      return one.body.binding.psaTicketId === 'T-1001';
    });
    const deliveries = await t.api.request('GET', `/api/v1/alerts/${alert.id}/deliveries`, {
      token: psaTenant.orgToken,
    });
    expect(deliveries.body.data).toMatchObject([{ event: 'alert.created', status: 'delivered', attempts: 1 }]);
    // Low severity is not among the integration's: no event, and no ticket either.
    const second = await enrollDevice(t.api, psaTenant, 'psa-host-2');
    await runWithExit(psaTenant.orgToken, 4, psaScript, second);
    await eventually(async () => {
      const low = await t.api.request('GET', `/api/v1/alerts?severity=low`, { token: psaTenant.orgToken });
      return low.body.data[0]?.binding.target === 'none';
    });
    expect(receiver.received('ok')).toHaveLength(1);
  });

  it('retries a failing receiver with exponential backoff over more than 24 hours, then fails for good', async () => {
    expect(retryDelaysSeconds.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(24 * 3600);
    await t.api.request('PATCH', `/api/v1/integrations/psa/${integrationId}`, {
      token: psaTenant.partnerToken,
      body: { url: receiver.url('fail') },
    });
    const [alert] = (await alertsOf(psaTenant.orgToken, '&severity=medium')).data;
    const acked = await t.api.request('POST', `/api/v1/alerts/${alert.id}/acknowledge`, { token: psaTenant.orgToken });
    expect(acked.status).toBe(200);
    const deliveryOf = async () =>
      (
        await t.db.admin.query<{ id: string; status: string; attempts: number; nextAttemptAt: Date }>(
          `SELECT id, status, attempts, next_attempt_at AS "nextAttemptAt" FROM alert_deliveries
          WHERE alert_id = :id::uuid AND event = 'alert.acknowledged'`,
          { id: alert.id },
        )
      ).rows[0]!;
    await eventually(async () => (await deliveryOf()).attempts === 1);
    let delivery = await deliveryOf();
    expect(delivery.status).toBe('pending');
    const waits: number[] = [];
    for (let attempt = 2; attempt <= retryDelaysSeconds.length + 1; attempt++) {
      const due = delivery.nextAttemptAt;
      expect(await attemptDelivery(appDb(), delivery.id, new Date(due.getTime() - 1000))).toBe('not-due');
      const result = await attemptDelivery(appDb(), delivery.id, due);
      const next = await deliveryOf();
      if (next.nextAttemptAt) waits.push((next.nextAttemptAt.getTime() - due.getTime()) / 1000);
      delivery = next;
      expect(result).toBe(attempt === retryDelaysSeconds.length + 1 ? 'failed' : 'retrying');
    }
    expect(waits).toEqual(retryDelaysSeconds.slice(1));
    expect(delivery).toMatchObject({ status: 'failed', attempts: 12 });
    expect(receiver.received('fail')).toHaveLength(12);
    const log = await t.api.request('GET', `/api/v1/alerts/${alert.id}/deliveries`, { token: psaTenant.orgToken });
    expect(log.body.data[1]).toMatchObject({ status: 'failed', lastStatusCode: 503, lastError: 'HTTP 503' });
    expect(log.body.data[1].log).toHaveLength(12);
  });

  it('answers without waiting for the PSA, records a receiver that never answers as a timeout, and takes a slow one that answers in time', async () => {
    await t.api.request('PATCH', `/api/v1/integrations/psa/${integrationId}`, {
      token: psaTenant.partnerToken,
      body: { url: receiver.url('hang') },
    });
    const [alert] = (await alertsOf(psaTenant.orgToken, '&severity=medium')).data;
    const logOf = async () =>
      (await t.api.request('GET', `/api/v1/alerts/${alert.id}/deliveries`, { token: psaTenant.orgToken })).body.data[2];
    const held = receiver.received('hang').length;
    // While the resolve is answered, the PSA holds its delivery for as long as the test wants: a request that
    // waited for the PSA would not be answered before the test's own timeout.
    process.env.PSA_DELIVERY_TIMEOUT_MS = '600000';
    try {
      const resolved = await t.api.request('POST', `/api/v1/alerts/${alert.id}/resolve`, {
        token: psaTenant.orgToken,
      });
      expect(resolved.status).toBe(200);
      expect(await logOf()).toMatchObject({ attempts: 0 });
      await eventually(async () => receiver.received('hang').length > held);
    } finally {
      process.env.PSA_DELIVERY_TIMEOUT_MS = '500';
    }
    receiver.release();
    await eventually(async () => (await logOf()).attempts === 1);
    expect(await logOf()).toMatchObject({ status: 'pending', lastStatusCode: null });

    let delivery = await logOf();
    expect(await attemptDelivery(appDb(), delivery.id, new Date(delivery.nextAttemptAt))).toBe('retrying');
    expect(await logOf()).toMatchObject({
      status: 'pending',
      attempts: 2,
      lastStatusCode: null,
      lastError: 'No answer within 500 ms',
    });

    await t.api.request('PATCH', `/api/v1/integrations/psa/${integrationId}`, {
      token: psaTenant.partnerToken,
      body: { url: receiver.url('slow') },
    });
    // The slow receiver answers after 300 ms: well within this attempt's limit, however loaded the machine is.
    process.env.PSA_DELIVERY_TIMEOUT_MS = '30000';
    try {
      delivery = await logOf();
      expect(await attemptDelivery(appDb(), delivery.id, new Date(delivery.nextAttemptAt))).toBe('delivered');
    } finally {
      process.env.PSA_DELIVERY_TIMEOUT_MS = deliveryTimeoutMs;
    }
    expect(await logOf()).toMatchObject({ status: 'delivered', attempts: 3 });
  });
});

describe('alert bindings', () => {
  it('inherit the partner-wide default until the organization sets its own, and fall back to tickets when the integration goes', async () => {
    const acme = await createTenant(t.api, 'Umbrella');
    const integration = await t.api.request('POST', '/api/v1/integrations/psa', {
      token: acme.partnerToken,
      body: { name: 'ConnectWise', url: 'https://psa.example.com/events', secret: 'another-secret-1234' },
    });
    const byOrgUser = await t.api.request('PUT', `/api/v1/partners/${acme.partnerId}/alert-binding`, {
      token: acme.orgToken,
      body: { target: 'psa', integrationId: integration.body.id },
    });
    expect(byOrgUser.status).toBe(404);
    const partnerDefault = await t.api.request('PUT', `/api/v1/partners/${acme.partnerId}/alert-binding`, {
      token: acme.partnerToken,
      body: { target: 'psa', integrationId: integration.body.id },
    });
    expect(partnerDefault.status).toBe(200);
    const inherited = await t.api.request('GET', `/api/v1/orgs/organizations/${acme.orgId}/alert-binding`, {
      token: acme.orgToken,
    });
    expect(inherited.body).toEqual({ target: 'psa', integrationId: integration.body.id, inherited: true });
    const foreign = await t.api.request('PUT', `/api/v1/orgs/organizations/${acme.orgId}/alert-binding`, {
      token: acme.orgToken,
      body: { target: 'psa', integrationId: crypto.randomUUID() },
    });
    expect(foreign.status).toBe(404);
    const own = await t.api.request('PUT', `/api/v1/orgs/organizations/${acme.orgId}/alert-binding`, {
      token: acme.orgToken,
      body: { target: 'tickets' },
    });
    expect(own.body).toEqual({ target: 'tickets', integrationId: null, inherited: false });
    expect(await auditRowsOf(t.db.admin, 'alert_binding.update', acme.orgId)).toHaveLength(1);
    const deleted = await t.api.request('DELETE', `/api/v1/integrations/psa/${integration.body.id}`, {
      token: acme.partnerToken,
    });
    expect(deleted.status).toBe(204);
    const fallback = await t.api.request('GET', `/api/v1/partners/${acme.partnerId}/alert-binding`, {
      token: acme.partnerToken,
    });
    expect(fallback.body).toEqual({ target: 'tickets', integrationId: null, inherited: false });
    expect(await auditRowsOf(t.db.admin, 'integration.delete', integration.body.id)).toHaveLength(1);
  });
});
