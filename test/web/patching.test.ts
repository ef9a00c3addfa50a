import { beforeAll, describe, expect, it } from 'vitest';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';
import { seriousViolations } from './support/axe.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

describe.skipIf(!browserAvailable())('the Patching page in a browser', () => {
  const site = useViewer();
  let tenant: Tenant;
  let ringId: string;

  beforeAll(async () => {
    tenant = await createTenant(site.api, 'Pagepatch');
    const device = await enrollDevice(site.api, tenant, 'page-host');
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
    expect((await patches.locator('tbody tr').allInnerTexts()).sort()).toEqual([
      'KB1 Cumulative update\tcritical\tmissing\tapproved',
      'KB2 Defender definitions\tunspecified\tinstalled\tnot-approved',
    ]);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
