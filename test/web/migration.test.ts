import { readFile } from 'node:fs/promises';
import type { Download, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Demo, seedDemo, signDemoUserTokens } from '#demo/demo.ts';
import { seedDemoPostureFleet } from '#demo/demo-posture.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

const legend = (page: Page, list: string) =>
  page.getByRole('list', { name: list }).getByRole('listitem').allInnerTexts();
const productRow = (page: Page, product: string) => page.locator(`tr.product-row[data-product="${product}"]`);
const text = async (download: Download) => readFile((await download.path())!, 'utf8');

describe.skipIf(!browserAvailable())('the Migration page in a browser, with the demo fleet of npm start', () => {
  const site = useViewer();
  let demo: Demo;
  let token: string;
  const get = async (path: string) => {
    const reply = await site.api.request('GET', path, { token });
    expect(reply.status).toBe(200);
    return reply.body;
  };
  const open = async (query = '') => {
    const page = await site.open(`/migration.html${query}#token=${token}`);
    await page.locator('#posture table.posture-chart').waitFor();
    await page.locator('#progress .reconciliation-counts').waitFor();
    return page;
  };

  beforeAll(async () => {
    // The seeding of `npm start` (infra/local/main.ts).
    demo = await seedDemo(site.db.admin);
    await seedDemoPostureFleet(site.db.admin, demo);
    token = (await signDemoUserTokens(demo)).partnerAdmin;
  });

  it('shows enrollment progress and the coverage as the API counts them, never scanned apart from clean', async () => {
    const page = await open();
    const progress = await get(`/api/v1/orgs/organizations/${demo.orgId}/reconciliation`);
    const counts = progress.latest.counts;
    expect(await legend(page, 'Latest reconciliation')).toEqual([
      `Enrolled ${counts.enrolled}`,
      `Missing ${counts.missing}`,
      `Extra ${counts.extra}`,
      `Ambiguous ${counts.ambiguous}`,
    ]);
    // Two uploads in the demo: progress over time, one row each.
    expect(progress.history).toHaveLength(2);
    await expect(page.locator('.reconciliation-history tbody tr').count()).resolves.toBe(2);

    const { coverage } = await get(`/api/v1/reports/management-posture?orgId=${demo.orgId}`);
    expect(coverage.neverScanned).toBeGreaterThan(0);
    expect(coverage.neverScanned).not.toBe(coverage.clean);
    expect(await legend(page, 'Coverage')).toEqual([
      `Never scanned ${coverage.neverScanned}`,
      `Stale (over 7 days) ${coverage.stale}`,
      `Clean ${coverage.clean}`,
      `With a detection ${coverage.withDetection}`,
    ]);
    // The chart's rows: never scanned and clean each on their own, beside the products.
    const population = (kind: string) =>
      page.locator(`tr.coverage-row[data-population="${kind}"] td.figures`).innerText();
    expect(await population('bar-never')).toBe(`${coverage.neverScanned} devices`);
    expect(await population('bar-clean')).toBe(`${coverage.clean} devices`);
    expect(await productRow(page, 'Datto RMM').locator('td.figures').innerText()).toBe(
      '3 active · 2 installed · 1 stale',
    );
    expect(await productRow(page, 'Datto RMM').getByRole('img').getAttribute('aria-label')).toBe(
      'Datto RMM: Active 3, Installed 2, Stale 1',
    );
  });

  it('moves a snapshot out of stale when the window widens', async () => {
    const page = await open('?staleDays=30');
    const { coverage } = await get(`/api/v1/reports/management-posture?orgId=${demo.orgId}&staleDays=30`);
    expect(coverage.stale).toBe(0);
    expect(await legend(page, 'Coverage')).toContain(`With a detection ${coverage.withDetection}`);
    expect(await productRow(page, 'Datto RMM').locator('td.figures').innerText()).toBe(
      '4 active · 2 installed · 0 stale',
    );
  });

  it('drills down to the devices behind a product and status, and downloads them and the report as CSV', async () => {
    const page = await open();
    await productRow(page, 'Datto RMM').getByRole('button', { name: '3 active' }).click();
    // Every device whose latest scan found it active, the stale one flagged.
    await page.getByRole('heading', { name: 'Datto RMM, active: 4 devices' }).waitFor();
    const devices = await get(
      `/api/v1/reports/management-posture/devices?orgId=${demo.orgId}&product=Datto%20RMM&status=active`,
    );
    const hostnames = devices.data
      .filter((d: { stale: boolean }) => !d.stale)
      .map((d: { hostname: string }) => d.hostname);
    expect(await page.locator('table.drill-devices tbody tr').allInnerTexts()).toEqual(
      devices.data.map((d: { hostname: string; stale: boolean }) =>
        expect.stringMatching(new RegExp(`^${d.hostname}\\t.*\\t${d.stale ? 'stale scan' : 'current'}$`)),
      ),
    );
    expect(hostnames).toEqual(['MIG-WS-01', 'MIG-WS-02', 'MIG-WS-03']);

    const [devicesCsv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Devices CSV' }).click(),
    ]);
    const [header, ...rows] = (await text(devicesCsv)).trimEnd().split('\r\n');
    expect(header).toContain('hostname');
    expect(rows.map((row) => row.split(',')[3])).toEqual(devices.data.map((d: { hostname: string }) => d.hostname));

    const [reportCsv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Report CSV' }).click(),
    ]);
    const lines = (await text(reportCsv)).trimEnd().split('\r\n');
    expect(lines[0]).toBe('category,product,status,devices');
    expect(lines).toContain('coverage,neverScanned,,3');
    expect(lines).toContain('rmm,Datto RMM,active,3');
  });

  it("downloads a fleet key's deployment script, carrying the key", async () => {
    const page = await open();
    const keys = await get(`/api/v1/orgs/organizations/${demo.orgId}/enrollment-keys?limit=100`);
    const fleetKey = keys.data.find((k: { name: string }) => k.name === 'Migration wave 2');
    await page.getByLabel('Enrollment key').selectOption(fleetKey.id);
    await page.getByLabel('Platform').selectOption('linux');
    const [script] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download script' }).click(),
    ]);
    expect(script.suggestedFilename()).toBe(`logbook-deploy-${fleetKey.id}-linux.sh`);
    const body = await text(script);
    expect(body.startsWith('#!/bin/sh')).toBe(true);
    // The key itself (which starts with its shown prefix), not the placeholder an operator would fill in.
    expect(body).toContain(`|| ENROLLMENT_KEY='${fleetKey.keyPrefix}`);
    // Keys used up (the demo's single-install keys) are not offered.
    expect(await page.getByLabel('Enrollment key').locator('option').allInnerTexts()).toEqual([
      expect.stringContaining('Migration wave 2'),
    ]);
  });
});
