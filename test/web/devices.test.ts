import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, seedDeviceFleet } from '#test/support/device-fleet.ts';
import { seriousViolations } from './support/axe.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

const desktop = { width: 1440, height: 900 };
const phone = { width: 390, height: 844 };

/** The rows of a table as text, cell by cell. */
async function tableRows(page: Page, selector = 'table.devices-table tbody tr') {
  const rows = await page.locator(selector).all();
  return Promise.all(rows.map(async (row) => (await row.locator('th, td').allInnerTexts()).map((text) => text.trim())));
}

describe.skipIf(!browserAvailable())('the Devices page in a browser', () => {
  const site = useViewer();
  let fleet: Fleet;
  let token: string;

  const openList = async (query = '', viewport = desktop) => {
    const page = await site.open(`/devices.html${query}#token=${token}`, viewport);
    await page
      .locator('#list-status')
      .filter({ hasText: /Devices \d|No device/ })
      .waitFor();
    return page;
  };
  const openDevice = async (hostname: keyof Fleet['devices'], viewport = desktop) => {
    const page = await site.open(
      `/devices.html?${new URLSearchParams({ org: fleet.tenant.orgId, device: fleet.devices[hostname].deviceId })}#token=${token}`,
      viewport,
    );
    await page.locator('#monitors table, #monitors .empty').waitFor();
    await page.locator('#policies table, #policies .empty').waitFor();
    await page.locator('#open-alerts table, #open-alerts .empty').waitFor();
    return page;
  };

  beforeAll(async () => {
    fleet = await seedDeviceFleet(site.api, site.db.admin);
    token = fleet.tenant.partnerToken;
  });

  it('lists the devices with site, OS, online, open alerts and groups as the API has them; axe finds nothing serious', async () => {
    const page = await openList();
    expect(await page.locator('#list-status').innerText()).toBe('Devices 1–3 of 3');
    const rows = await tableRows(page);
    const byHost = Object.fromEntries(rows.map((cells) => [cells[0], cells.slice(1)]));
    expect(byHost).toEqual({
      'SRV-01': ['Main', 'windows Server 2022', '● Online', '1 open', 'Servers\nWindows'],
      'SRV-02': ['Branch office', 'linux Ubuntu 24.04', '○ Offline', '0', 'Servers'],
      'WS-01': ['Main', 'windows 11', '○ Offline', '0', 'Windows'],
    });
    expect(await seriousViolations(page)).toEqual([]);
    // The header links the page once, marked current.
    await expect(page.getByRole('link', { name: 'Devices', exact: true }).getAttribute('aria-current')).resolves.toBe(
      'page',
    );
  });

  it('adds custom fields as columns kept in the address, and exports the rows and columns shown as CSV', async () => {
    const page = await openList();
    await page.getByRole('checkbox', { name: 'Asset tag' }).click();
    await page.locator('th', { hasText: 'Asset tag' }).waitFor();
    await page.getByRole('checkbox', { name: 'Rack' }).click();
    await page.locator('th', { hasText: 'Rack' }).waitFor();
    expect(new URL(page.url()).searchParams.get('fields')).toBe('asset_tag,rack');
    const rows = await tableRows(page);
    expect(rows.map((cells) => [cells[0], ...cells.slice(-2)])).toEqual(
      expect.arrayContaining([
        ['SRV-01', 'A-100', 'R1'],
        ['SRV-02', '', 'R1'],
        ['WS-01', 'A-200', 'R1'],
      ]),
    );
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    const csv = (await readFile((await download.path())!, 'utf8')).trimEnd().split('\r\n');
    expect(csv[0]).toBe('Hostname,Site,OS,Online,Open alerts,Groups,Asset tag,Rack');
    // The rows shown, in their order, as text: no alert count where the table shows '0', an empty cell for no value.
    const lines: Record<string, string> = {
      'SRV-01': 'SRV-01,Main,windows Server 2022,online,1,Servers; Windows,A-100,R1',
      'SRV-02': 'SRV-02,Branch office,linux Ubuntu 24.04,offline,0,Servers,,R1',
      'WS-01': 'WS-01,Main,windows 11,offline,0,Windows,A-200,R1',
    };
    expect(csv.slice(1)).toEqual(rows.map((cells) => lines[cells[0]!]));
    expect(download.suggestedFilename()).toBe('devices-fleetco-corp-page-1.csv');
    // A shared link keeps the columns.
    const again = await openList(new URL(page.url()).search);
    await again.locator('th', { hasText: 'Asset tag' }).waitFor();
    await again.getByRole('checkbox', { name: 'Asset tag' }).click();
    await again.locator('th', { hasText: 'Asset tag' }).waitFor({ state: 'detached' });
    expect(new URL(again.url()).searchParams.get('fields')).toBe('rack');
  });

  it('filters with the device-group filter language, kept in the address; says why a filter is refused', async () => {
    const page = await openList();
    await page
      .getByRole('textbox', { name: 'Filter' })
      .fill('{ "all": [{ "field": "osType", "op": "equals", "value": "windows" }] }');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('#list-status').filter({ hasText: 'Devices 1–2 of 2' }).waitFor();
    expect((await tableRows(page)).map((cells) => cells[0])).toEqual(['SRV-01', 'WS-01']);
    const preview = await site.api.request(
      'POST',
      `/api/v1/orgs/organizations/${fleet.tenant.orgId}/device-groups/preview`,
      { token, body: { filter: { field: 'osType', op: 'equals', value: 'windows' } } },
    );
    expect(preview.body.pagination.total).toBe(2);
    // Back returns to the list before the filter, Forward to the filtered one.
    await page.goBack();
    await page.locator('#list-status').filter({ hasText: 'Devices 1–3 of 3' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Filter' }).inputValue()).toBe('');
    await page.goForward();
    await page.locator('#list-status').filter({ hasText: 'Devices 1–2 of 2' }).waitFor();
    // Reload keeps the filter; the online field means the list's Online column.
    const reloaded = await openList(new URL(page.url()).search);
    expect(await reloaded.getByRole('textbox', { name: 'Filter' }).inputValue()).toContain('"windows"');
    await reloaded
      .getByRole('textbox', { name: 'Filter' })
      .fill('{ "field": "online", "op": "equals", "value": true }');
    await reloaded.getByRole('button', { name: 'Apply' }).click();
    await reloaded.locator('#list-status').filter({ hasText: 'Devices 1–1 of 1' }).waitFor();
    expect(await tableRows(reloaded)).toEqual([expect.arrayContaining(['SRV-01', '● Online'])]);
    // Not JSON, and JSON the API refuses: both said in words, no list.
    await reloaded.getByRole('textbox', { name: 'Filter' }).fill('{ hostname');
    await reloaded.getByRole('button', { name: 'Apply' }).click();
    await reloaded.getByText('The filter is not JSON').waitFor();
    await reloaded
      .getByRole('textbox', { name: 'Filter' })
      .fill('{ "field": "colour", "op": "equals", "value": "red" }');
    await reloaded.getByRole('button', { name: 'Apply' }).click();
    await reloaded.getByText(/The server refused the request \(400\)/).waitFor();
    await reloaded.getByRole('button', { name: 'Clear' }).click();
    await reloaded.locator('#list-status').filter({ hasText: 'Devices 1–3 of 3' }).waitFor();
  });

  it("shows a device's monitor states with a chart of its samples, effective policies with their origin, open alerts, groups and custom fields", async () => {
    const page = await openList();
    await page.getByRole('link', { name: 'SRV-01' }).click();
    await page.locator('#monitors table').waitFor();
    await page.locator('#open-alerts table').waitFor();
    await page.locator('#policies table').waitFor();
    expect(await page.getByRole('heading', { level: 2, name: 'SRV-01' }).isVisible()).toBe(true);

    const cpu = page.locator('#monitors tr[data-item="cpu"]');
    expect(await cpu.locator('.state').innerText()).toBe('✕ Firing');
    expect(await cpu.locator('td[data-label="Last value"]').innerText()).toBe('97 %');
    const chart = cpu.getByRole('img');
    const label = await chart.getAttribute('aria-label');
    expect(label).toMatch(
      /^cpu \(cpu\.percent\): 9 samples from .+, lowest 22 %, highest 97 %, last 97 %; threshold 75 %$/,
    );
    // One point per sample, oldest first.
    expect((await chart.locator('polyline').getAttribute('points'))!.split(' ')).toHaveLength(fleet.cpuSamples.length);
    const memory = page.locator('#monitors tr[data-item="memory"]');
    expect(await memory.locator('td[data-label="Last samples"]').innerText()).toBe('no samples in the last 24 hours');

    const effective = await site.api.request(
      'GET',
      `/api/v1/devices/${fleet.devices['SRV-01'].deviceId}/effective-policies`,
      { token },
    );
    expect(effective.body.items.map((i: { key: string }) => i.key).sort()).toEqual(['cpu', 'memory', 'offline']);
    const policyRow = (key: string) => page.locator(`#policies tr[data-item="${key}"]`);
    expect(await policyRow('cpu').locator('td[data-label="From"]').innerText()).toBe(
      'Server watch v1\nassigned to group Servers, priority 100',
    );
    expect(await policyRow('cpu').locator('td[data-label="Overrides"]').innerText()).toBe(
      'Baseline v1\nassigned partner-wide, priority 100',
    );
    expect(await policyRow('cpu').locator('td[data-label="What it watches"]').innerText()).toBe(
      'cpu.percent, last over 1 min > 75 %, clears < 60 %, pending 0 min',
    );
    expect(await policyRow('offline').locator('td[data-label="What it watches"]').innerText()).toBe(
      'no heartbeat for 15 min',
    );

    const alerts = await tableRows(page, '#open-alerts tbody tr');
    expect(alerts).toEqual([[expect.any(String), 'critical', 'monitor cpu (policy v1)', expect.any(String)]]);
    expect(await page.locator('#groups .chip').allInnerTexts()).toEqual(['Servers static', 'Windows dynamic']);
    expect(await page.locator('#fields .fact').allInnerTexts()).toEqual(['Asset tag\nA-100', 'Rack\nR1']);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows an exempted item with its reason, and no open alert', async () => {
    const page = await openDevice('WS-01');
    const memory = page.locator('#policies tr.exempted[data-item="memory"]');
    expect(await memory.locator('td[data-label="What it watches"]').innerText()).toBe('Exempted: Kiosk');
    expect(await memory.locator('td[data-label="Overrides"]').innerText()).toBe('exemption for this device');
    expect(await page.locator('#open-alerts').innerText()).toContain('No open alert.');
    expect(await page.locator('#monitors tr[data-item="cpu"] td[data-label="State"]').innerText()).toBe(
      'not evaluated yet',
    );
  });

  it("says another tenant's device is not found", async () => {
    const page = await site.open(
      `/devices.html?${new URLSearchParams({ device: fleet.otherDevice.deviceId })}#token=${token}`,
      desktop,
    );
    await page.getByText(/Not found \(404\)/).waitFor();
    expect(await page.locator('main').innerText()).not.toContain('RIVAL-01');
  });

  it("fits a phone's width, the list and a device's page, with nothing serious for axe", async () => {
    // Nothing wider than the screen: the page never scrolls sideways.
    const fits = (page: Page) =>
      page.evaluate('document.documentElement.scrollWidth <= window.innerWidth') as Promise<boolean>;
    const list = await openList('', phone);
    expect(await fits(list)).toBe(true);
    expect(await list.getByRole('link', { name: 'SRV-01' }).isVisible()).toBe(true);
    expect(await seriousViolations(list)).toEqual([]);
    const device = await openDevice('SRV-01', phone);
    expect(await fits(device)).toBe(true);
    expect(await device.locator('#monitors tr[data-item="cpu"] .state').isVisible()).toBe(true);
    expect(await seriousViolations(device)).toEqual([]);
  });
});
