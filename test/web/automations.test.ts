import { beforeAll, describe, expect, it } from 'vitest';
import { scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';
import { seriousViolations } from './support/axe.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

describe.skipIf(!browserAvailable())('the Automations page in a browser', () => {
  const site = useViewer();
  let tenant: Tenant;
  let automationId: string;

  const post = async (path: string, body: unknown) => {
    const reply = await site.api.request('POST', path, { token: tenant.orgToken, body });
    expect(reply.status, JSON.stringify(reply.body)).toBeLessThan(300);
    return reply.body;
  };

  beforeAll(async () => {
    tenant = await createTenant(site.api, 'Wayne');
    await enrollDevice(site.api, tenant, 'cave-01');
    const script = await post('/api/v1/scripts', { ...scriptBody({ name: 'Clear cache' }), orgId: tenant.orgId });
    const automation = await post('/api/v1/automations', {
      orgId: tenant.orgId,
      name: 'Nightly cache clear',
      triggers: [
        { type: 'schedule', schedule: { rrule: 'FREQ=DAILY;BYHOUR=3', start: '2026-01-01T03:00:00' } },
        { type: 'manual' },
      ],
      actions: [{ type: 'run-script', scriptId: script.id, parameters: { days: 1 } }],
    });
    automationId = automation.id;
    await post(`/api/v1/automations/${automationId}/run`, {});
  });

  it('lists the automations with triggers, next occurrences in local time and the last run; a run links its script runs', async () => {
    const page = await site.open(`/automations.html?org=${tenant.orgId}#token=${tenant.orgToken}`);
    const row = page.locator('table.automation-table tbody tr').first();
    await row.waitFor();
    const cells = await row.locator('td').allInnerTexts();
    expect(cells[0]).toBe('Nightly cache clear');
    expect(cells[2]).toContain("FREQ=DAILY;BYHOUR=3 from 2026-01-01T03:00:00 (each device's local time)");
    expect(cells[3]).toMatch(/^UTC: \d{4}-\d{2}-\d{2} 03:00:00\+00:00/);
    expect(cells[4]).toContain('running');
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Nightly cache clear' }).click();
    await page.locator('table.run-table tbody tr').first().waitFor();
    await page.getByRole('button', { name: 'Dry run' }).click();
    await expect(page.locator('table.dry-run-table tbody tr').first().innerText()).resolves.toMatch(/cave-01\tUTC\tno/);
    await page.locator('table.run-table tbody tr button').first().click();
    const item = page.locator('table.run-items tbody tr').first();
    await item.waitFor();
    await expect(item.innerText()).resolves.toContain('run-script: dispatched');
    await item.getByRole('button', { name: 'script run' }).click();
    await expect(page.locator('#script-run tbody tr').first().innerText()).resolves.toMatch(/cave-01\tpending/);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
