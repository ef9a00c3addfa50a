import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { appDb } from '#shared/db/client.ts';
import type { PatchInstallMessage } from '#shared/live-query/protocol.ts';
import { runOccurrenceJob } from '#shared/patching/install.ts';
import { compileSchedule, nextOccurrence } from '#shared/schedules/engine.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { auditRowsOf } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
type Enrolled = { agentId: string; deviceId: string; token: string };
let a: Enrolled;
let b: Enrolled;
let c: Enrolled;
let policyId: string;
let pilot: { id: string };
let broad: { id: string };
let patchIds: Record<string, string>;
const agents: { stop(): Promise<void> }[] = [];
const received: Record<'a' | 'b' | 'c' | 'd', PatchInstallMessage[]> = { a: [], b: [], c: [], d: [] };

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();
const scanOf = (externalIds: string[]) => ({
  scanId: 'scan-1',
  scannedAt: new Date().toISOString(),
  source: 'windows-update',
  items: externalIds.map((externalId) => ({
    externalId,
    kb: externalId,
    title: `Update ${externalId}`,
    severity: externalId === 'FEAT1' ? 'Moderate' : 'Critical',
    category: externalId === 'FEAT1' ? 'Feature Packs' : 'Security Updates',
    releaseDate: externalId === 'NEW1' ? daysAgo(2) : daysAgo(30),
    requiresReboot: true,
    state: 'missing',
  })),
});
const ringItem = (key: string, order: number, extra: Record<string, unknown> = {}) => ({
  key,
  type: 'ring',
  order,
  groupIds: [],
  deferralDays: 0,
  deadlineDays: 7,
  schedule: { rrule: 'FREQ=WEEKLY;BYDAY=SU', start: '2027-03-07T02:30:00', timezone: 'Europe/Berlin' },
  windowMinutes: 120,
  rebootPolicy: 'if-required',
  promotion: { minDevices: 1, minSuccessPercent: 100, soakHours: 0 },
  ...extra,
});
const post = (path: string, token: string, body?: unknown, headers?: Record<string, string>) =>
  t.api.request('POST', path, { token, body, headers });
const jobOf = (jobId: string) => t.api.request('GET', `/api/v1/patch-jobs/${jobId}`, { token: tenant.orgToken });

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Vandelay');
  other = await createTenant(t.api, 'Kramerica');
  a = await enrollDevice(t.api, tenant, 'pilot-a');
  b = await enrollDevice(t.api, tenant, 'broad-b');
  c = await enrollDevice(t.api, tenant, 'broad-c');
  await enrollDevice(t.api, tenant, 'never-scanned');
  for (const device of [a, b, c])
    await t.api.request('PUT', `/api/v1/agents/${device.agentId}/patch-inventory`, {
      token: device.token,
      body: scanOf(['SEC1', 'FEAT1', 'NEW1']),
    });
  const listed = await t.api.request('GET', '/api/v1/patches', { token: tenant.orgToken });
  patchIds = Object.fromEntries(listed.body.data.map((p: any) => [p.externalId, p.id]));
  const group = await post(`/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, tenant.orgToken, {
    name: 'Pilot',
    type: 'static',
  });
  await post(`/api/v1/device-groups/${group.body.id}/members`, tenant.orgToken, { deviceIds: [a.deviceId] });
  const created = await post('/api/v1/policies', tenant.orgToken, {
    kind: 'patching',
    name: 'Workstations',
    orgId: tenant.orgId,
    items: [
      { key: 'security', type: 'approval-rule', severities: ['critical'], categories: ['Security Updates'] },
      ringItem('pilot', 0, { groupIds: [group.body.id] }),
      ringItem('broad', 1, { deferralDays: 5, rebootPolicy: 'always' }),
    ],
  });
  expect(created.status).toBe(201);
  policyId = created.body.id;
  [pilot, broad] = created.body.items.filter((i: any) => i.type === 'ring');
  await post(`/api/v1/policies/${policyId}/assignments`, tenant.orgToken, {
    level: 'organization',
    targetId: tenant.orgId,
  });
});
afterAll(async () => {
  for (const agent of agents) await agent.stop();
});

/**
 * The simulated agent of a device, answering patch.install: the patches named in `failing` fail, those named in
 * `rebooting` answer reboot-required (the agent reboots then, unless it was sent rebootPolicy never).
 */
async function simulate(
  device: Enrolled,
  name: keyof typeof received,
  failing: string[] = [],
  rebooting: string[] = [],
) {
  const agent = startAgent({
    server: t.api.url,
    wsUrl: t.api.wsUrl,
    agentId: device.agentId,
    token: device.token,
    store: generateEventStore({ computer: name, anchor: new Date('2026-03-01T12:00:00Z') }),
    submitEvents: false,
    heartbeatSeconds: 3600,
    patching: {
      received: received[name],
      outcomeOf: (patch) =>
        failing.includes(patch.externalId)
          ? 'failed'
          : rebooting.includes(patch.externalId)
            ? 'reboot-required'
            : 'installed',
    },
  });
  agents.push(agent);
  await agent.connected();
  return agent;
}

describe('patching policies and rings', () => {
  it('checks ring and rule items, naming the field; each ring gets an id kept while its key stays', async () => {
    for (const [items, path] of [
      [
        [ringItem('r', 0, { schedule: { rrule: 'FREQ=SECONDLY', start: '2027-01-01T00:00:00', timezone: 'UTC' } })],
        'body.items.0.schedule.rrule',
      ],
      [[ringItem('r', 0), ringItem('s', 0)], 'body.items.1.order'],
      [[ringItem('r', 0, { rebootPolicy: 'sometimes' })], 'body.items.0.rebootPolicy'],
      [[{ key: 'x', type: 'approval-rule', severities: ['huge'] }], 'body.items.0.severities.0'],
      [[{ key: 'x', type: 'blocklist' }], 'body.items.0.type'],
    ] as const) {
      const reply = await post('/api/v1/policies', tenant.orgToken, {
        kind: 'patching',
        name: 'Bad',
        orgId: tenant.orgId,
        items,
      });
      expect(reply.status, path).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const theirs = await post(`/api/v1/orgs/organizations/${other.orgId}/device-groups`, other.orgToken, {
      name: 'Theirs',
      type: 'static',
    });
    const foreign = await post('/api/v1/policies', tenant.orgToken, {
      kind: 'patching',
      name: 'Foreign group',
      orgId: tenant.orgId,
      items: [ringItem('r', 0, { groupIds: [theirs.body.id] })],
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details[0].path).toBe('body.items.0.groupIds');

    expect(pilot.id).toMatch(/^[0-9a-f-]{36}$/);
    const policy = await t.api.request('GET', `/api/v1/policies/${policyId}`, { token: tenant.orgToken });
    const rule = policy.body.items.find((i: any) => i.type === 'approval-rule');
    expect(rule.categories).toEqual(['security']);
    // A change of the items keeps each ring's id (the key names it), a new ring gets its own.
    const changed = await t.api.request('PATCH', `/api/v1/policies/${policyId}`, {
      token: tenant.orgToken,
      body: { items: [...policy.body.items.map(({ id: _, ...item }: any) => item), ringItem('late', 2)] },
    });
    expect(changed.status).toBe(200);
    const rings = changed.body.items.filter((i: any) => i.type === 'ring');
    expect(rings.map((r: any) => r.id).slice(0, 2)).toEqual([pilot.id, broad.id]);
    expect(rings[2].id).not.toBe(pilot.id);
    await t.api.request('PATCH', `/api/v1/policies/${policyId}`, {
      token: tenant.orgToken,
      body: { items: policy.body.items },
    });
  });

  it('holds the next ring while the first has failures, passes a patch by hand, installs offline devices on connection', async () => {
    await simulate(a, 'a', ['SEC1']);
    const first = await post(`/api/v1/patch-rings/${pilot.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'pilot-1',
    });
    expect(first.status).toBe(202);
    expect(first.body.devices).toBe(1);
    await eventually(async () => (await jobOf(first.body.jobId)).body.items[0]?.status === 'finished');
    // Only the approved (rule: critical security) and due patches: NEW1 is due in the pilot ring (no deferral).
    expect(received.a[0]).toMatchObject({
      type: 'patch.install',
      jobId: first.body.jobId,
      rebootPolicy: 'if-required',
    });
    expect(received.a[0]!.patchIds.sort()).toEqual([patchIds.SEC1, patchIds.NEW1].sort());
    expect(received.a[0]!.patches.map((p) => p.externalId).sort()).toEqual(['NEW1', 'SEC1']);
    const again = await post(`/api/v1/patch-rings/${pilot.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'pilot-1',
    });
    expect(again.body.jobId).toBe(first.body.jobId);
    const install = await auditRowsOf(t.db.admin, 'patch.install', a.deviceId);
    expect(install).toHaveLength(1);
    expect(install[0]).toMatchObject({ result: 'failure', details: { outcome: 'partial', jobId: first.body.jobId } });

    const status = await t.api.request('GET', `/api/v1/patch-rings/${pilot.id}/status`, { token: tenant.orgToken });
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ devices: 1, paused: false, nextRingId: broad.id });
    const sec1 = status.body.patches.find((p: any) => p.patchId === patchIds.SEC1);
    expect(sec1).toMatchObject({ installed: 0, failed: 1, successPercent: 0, passed: false });
    const new1 = status.body.patches.find((p: any) => p.patchId === patchIds.NEW1);
    expect(new1).toMatchObject({ installed: 1, failed: 0, successPercent: 100, passed: true });

    // The broad ring: SEC1 is held by the gate, NEW1 not due there (5 days' deferral from its release 2 days ago).
    await simulate(b, 'b');
    const held = await post(`/api/v1/patch-rings/${broad.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'broad-1',
    });
    expect(held.body.devices).toBe(0);

    const promoted = await post(`/api/v1/patch-rings/${pilot.id}/promote`, tenant.orgToken, {
      patchIds: [patchIds.SEC1],
    });
    expect(promoted.status).toBe(200);
    expect(await auditRowsOf(t.db.admin, 'patch.ring.promote', pilot.id)).toHaveLength(1);
    const next = await post(`/api/v1/patch-rings/${broad.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'broad-2',
    });
    expect(next.body.devices).toBe(2);
    await eventually(() => received.b.length === 1);
    expect(received.b[0]).toMatchObject({ patchIds: [patchIds.SEC1], rebootPolicy: 'always' });
    const pending = await jobOf(next.body.jobId);
    expect(pending.body.items.find((i: any) => i.deviceId === c.deviceId)).toMatchObject({ status: 'pending' });
    // The offline device gets its install at its next connection, within the window.
    await simulate(c, 'c');
    await eventually(async () => (await jobOf(next.body.jobId)).body.items.every((i: any) => i.status === 'finished'));
    expect(received.c[0]).toMatchObject({ jobId: next.body.jobId, patchIds: [patchIds.SEC1] });

    // At most one forced reboot a day: the next job of the day may not reboot them.
    await post(`/api/v1/patches/${patchIds.FEAT1}/approve`, tenant.orgToken, { orgId: tenant.orgId, ringId: broad.id });
    await post(`/api/v1/patch-rings/${pilot.id}/promote`, tenant.orgToken, { patchIds: [patchIds.FEAT1] });
    const third = await post(`/api/v1/patch-rings/${broad.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'broad-3',
    });
    expect(third.body.devices).toBe(2);
    await eventually(() => received.b.length === 2 && received.c.length === 2);
    expect(received.b[1]).toMatchObject({ patchIds: [patchIds.FEAT1], rebootPolicy: 'never' });
    expect(received.c[1]).toMatchObject({ patchIds: [patchIds.FEAT1], rebootPolicy: 'never' });
    await eventually(async () => (await jobOf(third.body.jobId)).body.items.every((i: any) => i.status === 'finished'));

    const jobs = await t.api.request('GET', `/api/v1/patch-jobs?ringId=${broad.id}`, { token: tenant.orgToken });
    expect(jobs.body.pagination.total).toBe(3);
    expect(
      (await t.api.request('GET', `/api/v1/patch-jobs/${third.body.jobId}`, { token: other.orgToken })).status,
    ).toBe(404);
  });

  it('holds back a device in a maintenance window suppressing patching: recorded with the window, sent nothing', async () => {
    const created = await post('/api/v1/maintenance-windows', tenant.orgToken, {
      orgId: tenant.orgId,
      name: 'Change freeze',
      schedule: { start: '2027-06-01T00:00:00', durationMinutes: 60 },
      targets: { deviceIds: [a.deviceId] },
      suppress: ['patching'],
    });
    expect(created.status).toBe(201);
    const window = created.body;
    expect(
      (await post(`/api/v1/maintenance-windows/${window.id}/start`, tenant.orgToken, { minutes: 60 })).status,
    ).toBe(200);
    const sent = received.a.length;
    const frozen = await post(`/api/v1/patch-rings/${pilot.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'pilot-frozen',
    });
    expect(frozen.status).toBe(202);
    const job = await jobOf(frozen.body.jobId);
    expect(job.body.devices).toMatchObject({ total: 1, pending: 0, suppressed: 1 });
    expect(job.body.items).toEqual([
      expect.objectContaining({ deviceId: a.deviceId, status: 'suppressed', maintenanceWindowId: window.id }),
    ]);
    // Once the window ends, the next occurrence installs again.
    expect((await post(`/api/v1/maintenance-windows/${window.id}/end`, tenant.orgToken)).status).toBe(200);
    const thawed = await post(`/api/v1/patch-rings/${pilot.id}/run-now`, tenant.orgToken, undefined, {
      'idempotency-key': 'pilot-thawed',
    });
    await eventually(() => received.a.length > sent);
    expect(received.a.at(-1)).toMatchObject({ jobId: thawed.body.jobId });
    expect(received.a.filter((m) => m.jobId === frozen.body.jobId)).toEqual([]);
  });

  it('pauses and resumes a ring (audited); a paused ring refuses run-now with 409; another tenant gets 404', async () => {
    const paused = await post(`/api/v1/patch-rings/${broad.id}/pause`, tenant.orgToken);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ ringId: broad.id, paused: true });
    expect((await post(`/api/v1/patch-rings/${broad.id}/run-now`, tenant.orgToken)).status).toBe(409);
    expect(await auditRowsOf(t.db.admin, 'patch.ring.pause', broad.id)).toHaveLength(1);
    expect((await post(`/api/v1/patch-rings/${broad.id}/resume`, tenant.orgToken)).body.paused).toBe(false);
    expect(await auditRowsOf(t.db.admin, 'patch.ring.resume', broad.id)).toHaveLength(1);
    expect((await post(`/api/v1/patch-rings/${broad.id}/pause`, other.orgToken)).status).toBe(404);
    expect(
      (await t.api.request('GET', `/api/v1/patch-rings/${broad.id}/status`, { token: other.partnerToken })).status,
    ).toBe(404);
  });

  it('reports compliance by worst state, pairs, rings and stale devices, as JSON and CSV', async () => {
    const reply = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance`, {
      token: tenant.orgToken,
    });
    expect(reply.status).toBe(200);
    // a: SEC1 failed, FEAT1 not approved in its ring, NEW1 approved; b and c: SEC1 and FEAT1 installed, NEW1 approved.
    expect(reply.body.devices).toEqual({
      failed: 1,
      missingApproved: 2,
      pendingReboot: 0,
      missingNotApproved: 0,
      installed: 0,
      stale: 1,
    });
    expect(reply.body.pairs).toEqual({
      failed: 1,
      missingApproved: 2,
      pendingReboot: 0,
      missingNotApproved: 1,
      installed: 5,
    });
    const stateOf = Object.fromEntries(reply.body.deviceStates.map((d: any) => [d.hostname, d.state]));
    expect(stateOf).toEqual({
      'pilot-a': 'failed',
      'broad-b': 'missing-approved',
      'broad-c': 'missing-approved',
      'never-scanned': 'stale',
    });
    expect(reply.body.deviceStates.find((d: any) => d.hostname === 'pilot-a').lastError).toMatch(/SEC1 failed/);
    const csv = await fetch(`${t.api.url}/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance?format=csv`, {
      headers: { authorization: `Bearer ${tenant.orgToken}` },
    });
    expect(csv.headers.get('content-type')).toMatch(/text\/csv/);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('deviceId,hostname,ringId,state,scannedAt,osUpdaterSuppressed,lastError');
    expect(lines).toHaveLength(5);
    expect(
      (
        await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance`, {
          token: other.partnerToken,
        })
      ).status,
    ).toBe(404);
    // The counts kept on the scan rows (by the uploads and the install results) are those of the device patches.
    const { rows: kept } = await t.db.admin.query<{ scans: number; drifted: number }>(
      `SELECT count(*)::int AS scans,
              count(*) FILTER (WHERE (s.installed, s.failed, s.pending_reboot, s.missing_numbers)
                                     IS DISTINCT FROM (c.installed, c.failed, c.pending_reboot, c.missing))::int AS drifted
         FROM device_patch_scans s CROSS JOIN LATERAL (
           SELECT count(*) FILTER (WHERE dp.state = 'installed')::int AS installed,
                  count(*) FILTER (WHERE dp.state = 'failed')::int AS failed,
                  count(*) FILTER (WHERE dp.state = 'pending-reboot')::int AS pending_reboot,
                  coalesce(array_agg(p.number ORDER BY p.number) FILTER (WHERE dp.state = 'missing'), '{}') AS missing
             FROM device_patches dp JOIN patches p ON p.id = dp.patch_id
            WHERE dp.device_id = s.device_id AND dp.source = s.source) c
        WHERE s.org_id = :orgId::uuid`,
      { orgId: tenant.orgId },
    );
    expect(kept[0]).toEqual({ scans: 3, drifted: 0 });
    // The organization's kept counts of missing patches, after the uploads and the install results, are a recount's.
    const missingCounts = (sql: string) => t.db.admin.query(sql, { orgId: tenant.orgId }).then((r) => r.rows);
    expect(
      await missingCounts(
        'SELECT patch_id, devices FROM patch_missing_counts WHERE org_id = :orgId::uuid ORDER BY patch_id',
      ),
    ).toEqual(
      await missingCounts(
        'SELECT patch_id, devices FROM patch_missing_recount() WHERE org_id = :orgId::uuid ORDER BY patch_id',
      ),
    );
  });

  it('resolves one device: the first ring whose groups hold it, else the last; a device-level policy wins for it alone, in the partner-wide report too', async () => {
    const patchesOf = (device: Enrolled) =>
      t.api.request('GET', `/api/v1/devices/${device.deviceId}/patches`, { token: tenant.orgToken });
    expect((await patchesOf(a)).body).toMatchObject({ deviceId: a.deviceId, policyId, ringId: pilot.id });
    expect((await patchesOf(b)).body).toMatchObject({ deviceId: b.deviceId, policyId, ringId: broad.id });
    const approvalOf = async (device: Enrolled, externalId: string) =>
      (await patchesOf(device)).body.data.find((p: any) => p.externalId === externalId).approval;
    expect(await approvalOf(c, 'NEW1')).toBe('approved');

    // A device-level patching policy without rules: closer than the organization's, it wins as a whole for c only.
    const own = await post('/api/v1/policies', tenant.orgToken, {
      kind: 'patching',
      name: 'Lab',
      orgId: tenant.orgId,
      items: [ringItem('solo', 0)],
    });
    expect(own.status).toBe(201);
    const solo = own.body.items.find((i: any) => i.type === 'ring');
    const assigned = await post(`/api/v1/policies/${own.body.id}/assignments`, tenant.orgToken, {
      level: 'device',
      targetId: c.deviceId,
    });
    expect(assigned.status).toBe(201);
    try {
      expect((await patchesOf(c)).body).toMatchObject({ policyId: own.body.id, ringId: solo.id });
      expect(await approvalOf(c, 'NEW1')).toBe('not-approved');
      expect((await patchesOf(b)).body).toMatchObject({ policyId, ringId: broad.id });
      const report = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance`, {
        token: tenant.orgToken,
      });
      expect(report.body.deviceStates.find((d: any) => d.deviceId === c.deviceId)).toMatchObject({
        ringId: solo.id,
        state: 'missing-not-approved',
      });
      expect(report.body.rings.find((r: any) => r.ringId === solo.id).devices).toMatchObject({
        missingNotApproved: 1,
      });

      const partner = await t.api.request('GET', `/api/v1/partners/${tenant.partnerId}/patch-compliance`, {
        token: tenant.partnerToken,
      });
      expect(partner.status).toBe(200);
      expect(partner.body).toMatchObject({ partnerId: tenant.partnerId, devices: report.body.devices });
      expect(partner.body.organizations).toEqual([
        expect.objectContaining({ orgId: tenant.orgId, devices: report.body.devices, pairs: report.body.pairs }),
      ]);
      expect(partner.body.rings.map((r: any) => r.ringId).sort()).toEqual(
        report.body.rings.map((r: any) => r.ringId).sort(),
      );
      const csv = await fetch(`${t.api.url}/api/v1/partners/${tenant.partnerId}/patch-compliance?format=csv`, {
        headers: { authorization: `Bearer ${tenant.partnerToken}` },
      });
      const lines = (await csv.text()).trim().split('\r\n');
      expect(lines[0]).toBe(
        'orgId,name,failed,missingApproved,pendingReboot,missingNotApproved,installed,stale,osUpdaterNotSuppressed',
      );
      expect(lines).toHaveLength(2);
      for (const token of [other.partnerToken, tenant.orgToken])
        expect(
          (await t.api.request('GET', `/api/v1/partners/${tenant.partnerId}/patch-compliance`, { token })).status,
        ).toBe(404);
    } finally {
      await t.api.request('DELETE', `/api/v1/policy-assignments/${assigned.body.id}`, { token: tenant.orgToken });
    }
    expect((await patchesOf(c)).body).toMatchObject({ policyId, ringId: broad.id });
  });

  it('counts a device that answered reboot-required healthy in the gate only once it reports a boot after its install', async () => {
    const d = await enrollDevice(t.api, tenant, 'pilot-d');
    const group = (
      await t.api.request('GET', `/api/v1/policies/${policyId}`, { token: tenant.orgToken })
    ).body.items.find((i: any) => i.id === pilot.id).groupIds[0];
    await post(`/api/v1/device-groups/${group}/members`, tenant.orgToken, { deviceIds: [d.deviceId] });
    const scan = (scanId: string, missing: string, installed: string[]) => ({
      ...scanOf([missing]),
      scanId,
      items: [...scanOf([missing]).items, ...scanOf(installed).items.map((i) => ({ ...i, state: 'installed' }))],
    });
    const upload = async (body: unknown) =>
      expect(
        (await t.api.request('PUT', `/api/v1/agents/${d.agentId}/patch-inventory`, { token: d.token, body })).status,
      ).toBe(200);
    await upload(scan('reboot-1', 'REB1', []));
    const idOf = async (externalId: string) =>
      (await t.api.request('GET', '/api/v1/patches', { token: tenant.orgToken })).body.data.find(
        (p: any) => p.externalId === externalId,
      ).id as string;
    await simulate(d, 'd', [], ['REB1', 'REB2']);
    const gateOf = async (patchId: string) =>
      (
        await t.api.request('GET', `/api/v1/patch-rings/${pilot.id}/status`, { token: tenant.orgToken })
      ).body.patches.find((p: any) => p.patchId === patchId);
    const finished = async (key: string) => {
      const run = await post(`/api/v1/patch-rings/${pilot.id}/run-now`, tenant.orgToken, undefined, {
        'idempotency-key': key,
      });
      expect(run.status).toBe(202);
      await eventually(
        async () =>
          (await jobOf(run.body.jobId)).body.items.find((i: any) => i.deviceId === d.deviceId)?.status === 'finished',
      );
      return run.body.jobId as string;
    };

    // if-required: the agent reboots after REB1 and heartbeats with its new boot time.
    await finished('pilot-reboot-1');
    const reb1 = await idOf('REB1');
    expect(received.d[0]).toMatchObject({ patchIds: [reb1], rebootPolicy: 'if-required' });
    await eventually(async () => (await gateOf(reb1))?.healthy === 1);
    expect(await gateOf(reb1)).toMatchObject({ installed: 1, healthy: 1, passed: true });

    // The day's forced reboot is spent: REB2 is sent with never, the agent answers reboot-required and stays up.
    await upload(scan('reboot-2', 'REB2', ['REB1']));
    await finished('pilot-reboot-2');
    const reb2 = await idOf('REB2');
    expect(received.d[1]).toMatchObject({ patchIds: [reb2], rebootPolicy: 'never' });
    const bootedBefore = (
      await t.db.admin.query<{ at: Date }>('SELECT last_boot_at AS at FROM devices WHERE id = :id::uuid', {
        id: d.deviceId,
      })
    ).rows[0]!.at;
    const beat = (lastBootAt: Date) =>
      t.api.request('POST', `/api/v1/agents/${d.agentId}/heartbeat`, {
        token: d.token,
        body: { status: 'online', lastBootAt: lastBootAt.toISOString(), rebootPending: true },
      });
    // A heartbeat after the result without a boot since the install: installed, not healthy, the gate holds.
    expect((await beat(new Date(bootedBefore))).status).toBe(200);
    expect(await gateOf(reb2)).toMatchObject({ installed: 1, healthy: 0, passed: false });
    // Its next heartbeat reports a boot after the install: healthy, the gate passes.
    expect((await beat(new Date())).status).toBe(200);
    expect(await gateOf(reb2)).toMatchObject({ installed: 1, healthy: 1, passed: true });
  });

  it('runs a scheduled occurrence through the schedule engine across spring-forward, once per (ring, occurrence)', async () => {
    const policy = await t.api.request('GET', `/api/v1/policies/${policyId}`, { token: tenant.orgToken });
    const ring = policy.body.items.find((i: any) => i.id === pilot.id);
    // 02:30 does not exist in Berlin on 2027-03-28: the occurrence runs at 03:30 local, 01:30 UTC.
    const occurrence = nextOccurrence(compileSchedule(ring.schedule), new Date('2027-03-27T00:00:00Z'))!;
    expect(occurrence).toMatchObject({ key: '2027-03-28T02:30:00', utc: '2027-03-28T01:30:00.000Z' });
    const job = {
      ringId: pilot.id,
      policyId,
      version: policy.body.version,
      key: occurrence.key,
      at: occurrence.at.getTime(),
    };
    const now = new Date('2027-03-28T01:30:05Z');
    expect(await runOccurrenceJob(appDb(), job, now)).toBe('started');
    expect(await runOccurrenceJob(appDb(), job, now)).toBe('started');
    const { rows } = await t.db.admin.query(
      `SELECT starts_at AS "startsAt" FROM patch_jobs WHERE ring_id = :ringId::uuid AND occurrence_key = :key::text`,
      { ringId: pilot.id, key: occurrence.key },
    );
    expect(rows).toHaveLength(1);
    expect((rows[0]!.startsAt as Date).toISOString()).toBe('2027-03-28T01:30:00.000Z');
    // A job armed for an older version of the policy does nothing.
    expect(await runOccurrenceJob(appDb(), { ...job, version: job.version - 1 }, now)).toBe('moved');
  });

  it('counts a device a dynamic group of an earlier ring holds in that ring, in the report as for the device', async () => {
    const group = await post(`/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, tenant.orgToken, {
      name: 'Broad B',
      type: 'dynamic',
      filter: { field: 'hostname', op: 'startsWith', value: 'broad-b' },
    });
    expect(group.status).toBe(201);
    const policy = await t.api.request('GET', `/api/v1/policies/${policyId}`, { token: tenant.orgToken });
    const withGroup = policy.body.items.map((i: any) =>
      i.id === pilot.id ? { ...i, groupIds: [...i.groupIds, group.body.id] } : i,
    );
    expect(
      (
        await t.api.request('PATCH', `/api/v1/policies/${policyId}`, {
          token: tenant.orgToken,
          body: { items: withGroup },
        })
      ).status,
    ).toBe(200);
    try {
      const ringOf = async () =>
        Object.fromEntries(
          (
            await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance`, {
              token: tenant.orgToken,
            })
          ).body.deviceStates.map((d: any) => [d.hostname, d.ringId]),
        );
      expect(await ringOf()).toMatchObject({ 'pilot-a': pilot.id, 'broad-b': pilot.id, 'broad-c': broad.id });
      const own = await t.api.request('GET', `/api/v1/devices/${b.deviceId}/patches`, { token: tenant.orgToken });
      expect(own.body.ringId).toBe(pilot.id);
    } finally {
      const current = await t.api.request('GET', `/api/v1/policies/${policyId}`, { token: tenant.orgToken });
      await t.api.request('PATCH', `/api/v1/policies/${policyId}`, {
        token: tenant.orgToken,
        body: {
          items: current.body.items.map((i: any) =>
            i.id === pilot.id ? { ...i, groupIds: i.groupIds.filter((g: string) => g !== group.body.id) } : i,
          ),
        },
      });
    }
  });
});
