import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raiseScriptAlert } from '#shared/alerts/raise.ts';
import type { Severity } from '#shared/alerts/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { eventually } from '#test/support/live-agents.ts';
import { type ChannelReceivers, startChannelReceivers } from '#test/support/notification-receivers.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it is now. */
async function seriousFindings(page: Page) {
  // Evaluated through the browser's debugging protocol: the page's Content-Security-Policy allows no injected script.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const scope = globalThis as any;
    const { violations } = await scope.axe.run(scope.document, { resultTypes: ['violations'] });
    return violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  return (violations as { id: string; impact: string }[]).filter((v) => ['serious', 'critical'].includes(v.impact));
}

describe.skipIf(!browserAvailable())('the Alerts page in a browser', () => {
  const site = useViewer();
  let tenant: Tenant;
  let receivers: ChannelReceivers;
  let deviceId: string;
  const ids: Record<string, string> = {};
  let weekly: { id: string };
  let held: { id: string; name: string };

  async function raise(severity: Severity, name: string) {
    const scriptId = randomUUID();
    await raiseScriptAlert(
      appDb(),
      {
        runItemId: randomUUID(),
        runId: randomUUID(),
        orgId: tenant.orgId,
        partnerId: tenant.partnerId,
        deviceId,
        hostname: 'page-host',
        scriptId,
        scriptName: name,
        scriptVersion: 1,
        exitCode: 3,
      },
      severity,
    );
    const { rows } = await site.db.admin.query<{ id: string }>('SELECT id FROM alerts WHERE source_key = :key::text', {
      key: `script:${scriptId}`,
    });
    ids[name] = rows[0]!.id;
  }
  const post = async (path: string, body: unknown) => {
    const reply = await site.api.request('POST', path, { token: tenant.orgToken, body });
    expect(reply.status, JSON.stringify(reply.body)).toBeLessThan(300);
    return reply.body;
  };
  const open = async (query = '') => {
    const page = await site.open(`/alerts.html${query}#token=${tenant.orgToken}`);
    await page.locator('#alert-list table, #alert-list .empty').first().waitFor();
    await page.locator('#calendar ul, #calendar .empty').first().waitFor();
    return page;
  };

  beforeAll(async () => {
    tenant = await createTenant(site.api, 'Vandelay');
    receivers = await startChannelReceivers();
    deviceId = (await enrollDevice(site.api, tenant, 'page-host')).deviceId;
    const channel = await post('/api/v1/notification-channels', {
      orgId: tenant.orgId,
      name: 'NOC chat',
      type: 'slack',
      config: { url: receivers.url('page') },
    });
    await site.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/notification-defaults`, {
      token: tenant.orgToken,
      body: { channels: { medium: [channel.id], high: [channel.id] } },
    });
    weekly = await post('/api/v1/maintenance-windows', {
      orgId: tenant.orgId,
      name: 'Sunday patching',
      schedule: {
        rrule: 'FREQ=WEEKLY;BYDAY=SU',
        start: '2026-01-04T02:00:00',
        timezone: 'Europe/Berlin',
        durationMinutes: 120,
      },
      targets: { orgIds: [tenant.orgId] },
      suppress: ['patching'],
    });
    held = await post('/api/v1/maintenance-windows', {
      orgId: tenant.orgId,
      name: 'Disk swap',
      schedule: { start: '2026-01-01T00:00:00', durationMinutes: 60 },
      targets: { deviceIds: [deviceId] },
      suppress: ['alerts'],
    });
    await raise('medium', 'Disk check');
    await raise('high', 'Backup check');
    await eventually(() => receivers.received('page').length === 2);
    await post(`/api/v1/maintenance-windows/${held.id}/start`, { minutes: 60 });
    await raise('medium', 'Service check');
  });
  afterAll(() => receivers.close());

  it('lists the alerts with the one a window held back marked, and acknowledges two at once', async () => {
    const page = await open();
    const rows = page.locator('#alert-list tbody tr');
    await expect(rows.count()).resolves.toBe(3);
    await expect(page.locator(`tr[data-alert="${ids['Service check']}"] .alert-status`).innerText()).resolves.toContain(
      'held back by maintenance',
    );
    await page.getByRole('checkbox', { name: 'Select Disk check exited with code 3 on page-host' }).check();
    await page.getByRole('checkbox', { name: 'Select Backup check exited with code 3 on page-host' }).check();
    await page.getByRole('button', { name: 'Acknowledge selected' }).click();
    await page.getByText('Acknowledged 2 of 2.').waitFor();
    for (const name of ['Disk check', 'Backup check']) {
      const alert = await site.api.request('GET', `/api/v1/alerts/${ids[name]}`, { token: tenant.orgToken });
      expect(alert.body.status).toBe('acknowledged');
    }
    // The list is read again after the change.
    await page.locator(`tr[data-alert="${ids['Disk check']}"] .alert-status`, { hasText: 'acknowledged' }).waitFor();
    expect(await seriousFindings(page)).toEqual([]);
  });

  it('shows an alert’s detail: what fired it, its notification log, the window that held another back', async () => {
    const page = await open();
    await page.getByRole('button', { name: 'Backup check exited with code 3 on page-host' }).click();
    const detail = page.locator('#alert-detail');
    await detail.locator('table.notification-log').waitFor();
    await expect(detail.locator('table.notification-log tbody tr').first().innerText()).resolves.toMatch(
      /slack\talert\.created\tdelivered\t1/,
    );
    await expect(detail.locator('.alert-facts').nth(1).innerText()).resolves.toContain('exitCode');
    await page.getByRole('button', { name: 'Service check exited with code 3 on page-host' }).click();
    await detail.getByText('Held back by Disk swap').waitFor();
    await detail.getByText('Nobody was notified of this alert.').waitFor();
    expect(await seriousFindings(page)).toEqual([]);
  });

  it('filters by status in the address, and shows the maintenance calendar in local time', async () => {
    const page = await open('?status=acknowledged');
    await expect(page.locator('#alert-list tbody tr').count()).resolves.toBe(2);
    await page.locator('#status').selectOption('open');
    await page.getByRole('button', { name: 'Show alerts' }).click();
    await page.waitForURL(/status=open/);
    await expect.poll(() => page.locator('#alert-list tbody tr').count()).toBe(1);
    const occurrences = await page.locator(`li[data-window="${weekly.id}"] li.occurrence`).allInnerTexts();
    expect(occurrences.length).toBeGreaterThanOrEqual(4);
    // Sundays 02:00 in Berlin, at the offset in force then.
    for (const text of occurrences) expect(text).toMatch(/^\d{4}-\d{2}-\d{2} 02:00:00\+0[12]:00 \(/);
    await expect(page.locator(`li[data-window="${held.id}"]`).innerText()).resolves.toContain('in progress until');
  });
});
