import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { eventually } from '#test/support/live-agents.ts';
import { auditRowsOf } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';
import { seriousViolations } from './support/axe.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

describe.skipIf(!browserAvailable())('the Patching page in a browser', () => {
  const site = useViewer();
  let tenant: Tenant;
  let ringId: string;
  let device: Awaited<ReturnType<typeof enrollDevice>>;
  const agents: { stop(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const agent of agents) await agent.stop();
  });

  beforeAll(async () => {
    tenant = await createTenant(site.api, 'Pagepatch');
    device = await enrollDevice(site.api, tenant, 'page-host');
    await enrollDevice(site.api, tenant, 'silent-host');
    await site.api.request('PUT', `/api/v1/agents/${device.agentId}/patch-inventory`, {
      token: device.token,
      body: {
        scanId: 's1',
        scannedAt: new Date().toISOString(),
        source: 'windows-update',
        items: [
          {
            externalId: 'KB1',
            kb: 'KB1',
            title: 'Cumulative update',
            category: 'Security Updates',
            severity: 'Critical',
            requiresReboot: true,
            state: 'missing',
          },
          {
            externalId: 'KB2',
            kb: 'KB2',
            title: 'Defender definitions',
            category: 'Definition Updates',
            requiresReboot: false,
            state: 'installed',
          },
        ],
      },
    });
    const policy = await site.api.request('POST', '/api/v1/policies', {
      token: tenant.orgToken,
      body: {
        kind: 'patching',
        name: 'Servers',
        orgId: tenant.orgId,
        items: [
          { key: 'security', type: 'approval-rule', categories: ['security'] },
          { key: 'all', type: 'ring', order: 0, promotion: { minDevices: 2, minSuccessPercent: 90, soakHours: 24 } },
        ],
      },
    });
    ringId = policy.body.items.find((i: any) => i.type === 'ring').id;
    await site.api.request('POST', `/api/v1/policies/${policy.body.id}/assignments`, {
      token: tenant.orgToken,
      body: { level: 'organization', targetId: tenant.orgId },
    });
  });

  it('shows compliance by worst state, the rings with their gate and a device’s patches, with no serious accessibility finding', async () => {
    const page = await site.open(`/patching.html#token=${tenant.orgToken}`);
    const worst = page.getByRole('table', { name: 'Devices by worst state' });
    await worst.waitFor();
    expect(await worst.locator('tbody tr').innerText()).toBe('0\t1\t0\t0\t0\t1');
    await page.locator(`article.ring[data-ring="${ringId}"]`).waitFor();
    expect(await page.locator('article.ring').innerText()).toContain(
      'gate: at least 2 installed, 90 % success, 24 h soak',
    );
    await page.getByRole('button', { name: 'Patches of page-host' }).click();
    const patches = page.getByRole('table', { name: 'Patches of the device' });
    await patches.waitFor();
    const rows = await patches
      .locator('tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => cell.textContent).join('\t')));
    expect(rows.sort()).toEqual([
      'KB1 Cumulative update\tcritical\tmissing\tapproved\tApproveDeclineDefer',
      'KB2 Defender definitions\tunspecified\tinstalled\tnot-approved\tApproveDeclineDefer',
    ]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('acts from its buttons: a ring paused, resumed and run now, a held patch promoted, a device’s patch declined, deferred and approved', async () => {
    // The device's agent answers installs: KB1 fails, so the ring's gate holds it.
    const agent = startAgent({
      server: site.api.url,
      wsUrl: site.api.wsUrl,
      agentId: device.agentId,
      token: device.token,
      store: generateEventStore({ computer: 'page-host', anchor: new Date('2026-03-01T12:00:00Z') }),
      submitEvents: false,
      heartbeatSeconds: 3600,
      patching: { outcomeOf: () => 'failed' },
    });
    agents.push(agent);
    await agent.connected();
    const page = await site.open(`/patching.html#token=${tenant.orgToken}`);
    const status = page.locator('#patching-outcome');
    const ring = page.locator(`article.ring[data-ring="${ringId}"]`);

    await page.getByRole('button', { name: 'Pause ring all' }).click();
    await status.filter({ hasText: 'Ring all paused.' }).waitFor();
    await ring.getByRole('heading', { name: 'Ring all (order 0), paused' }).waitFor();
    expect(await page.getByRole('button', { name: 'Run now, ring all' }).isDisabled()).toBe(true);
    expect(await auditRowsOf(site.db.admin, 'patch.ring.pause', ringId)).toHaveLength(1);
    await page.getByRole('button', { name: 'Resume ring all' }).click();
    await status.filter({ hasText: 'Ring all resumed.' }).waitFor();

    await page.getByRole('button', { name: 'Run now, ring all' }).click();
    await status.filter({ hasText: /Ring all started now: 1 devices with installs \(job [0-9a-f-]{36}\)\./ }).waitFor();
    const jobs = async () =>
      (await site.api.request('GET', `/api/v1/patch-jobs?ringId=${ringId}`, { token: tenant.orgToken })).body.data;
    expect(await jobs()).toHaveLength(1);
    await eventually(async () => (await jobs())[0]?.devices.finished === 1);

    // The failed install holds KB1 at the gate until it is promoted by hand.
    await page.reload();
    const gate = page.getByRole('table', { name: 'Promotion gate of ring all' });
    await gate.waitFor();
    expect(await gate.locator('tbody tr').innerText()).toBe('Cumulative update\t0\t1\t0 %\theld\tPromote');
    await page.getByRole('button', { name: 'Promote Cumulative update through ring all' }).click();
    await status.filter({ hasText: 'Cumulative update promoted through ring all' }).waitFor();
    await gate.locator('tbody tr', { hasText: 'passed' }).waitFor();
    expect(await auditRowsOf(site.db.admin, 'patch.ring.promote', ringId)).toHaveLength(1);

    await page.getByRole('button', { name: 'Patches of page-host' }).click();
    const patches = page.getByRole('table', { name: 'Patches of the device' });
    const kb1 = patches.locator('tbody tr', { hasText: 'KB1' });
    await kb1.waitFor();
    for (const [verb, approval, told] of [
      ['Decline', 'declined', 'declined'],
      ['Defer', 'deferred', 'deferred until'],
      ['Approve', 'approved', 'approved'],
    ] as const) {
      await page.getByRole('button', { name: `${verb} KB1 Cumulative update` }).click();
      await status.filter({ hasText: `KB1 Cumulative update ${told}` }).waitFor();
      await kb1.locator('td', { hasText: new RegExp(`^${approval}$`) }).waitFor();
    }
    const patchId = (await site.api.request('GET', '/api/v1/patches', { token: tenant.orgToken })).body.data.find(
      (p: any) => p.externalId === 'KB1',
    ).id;
    for (const action of ['patch.decline', 'patch.defer', 'patch.approve'])
      expect(await auditRowsOf(site.db.admin, action, patchId), action).toHaveLength(1);
    const decided = await site.api.request('GET', `/api/v1/patches/${patchId}`, { token: tenant.orgToken });
    expect(decided.body.decisions).toEqual([
      expect.objectContaining({ orgId: tenant.orgId, ringId: null, decision: 'approved' }),
    ]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it("fits a phone's width with its rings, a device's patches and their buttons, with nothing serious for axe", async () => {
    const page = await site.open(`/patching.html#token=${tenant.orgToken}`, { width: 390, height: 844 });
    await page.getByRole('table', { name: 'Devices by worst state' }).waitFor();
    await page.locator(`article.ring[data-ring="${ringId}"]`).waitFor();
    await page.getByRole('button', { name: 'Patches of page-host' }).click();
    const patches = page.getByRole('table', { name: 'Patches of the device' });
    await patches.waitFor();
    // Nothing wider than the screen: the page never scrolls sideways; the actions stay on the screen.
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    expect(
      await patches
        .getByRole('button', { name: /Approve/ })
        .first()
        .isVisible(),
    ).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
