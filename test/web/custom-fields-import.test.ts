import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type Tenant } from '#test/support/tenants.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

const viewer = useViewer();
let acme: Tenant;
const slow = { timeout: 60_000 };

// 5,000 device rows: row 11 holds a seats value that is no number, row 21 names no enrolled device.
const deviceCount = 5000;
const valuesCsv = [
  'Hostname,Asset Tag,Seats,Colour',
  ...Array.from({ length: deviceCount }, (_, i) => {
    const hostname = i === 20 ? 'GHOST-01' : `WKS-${String(i).padStart(5, '0')}`;
    const seats = i === 10 ? 'many' : String((i % 50) + 1);
    return `${hostname},AT-${i},${seats},blue`;
  }),
].join('\n');

async function openWizard(tenant: Tenant) {
  const page = await viewer.open(`/custom-fields-import.html#token=${tenant.partnerToken}`);
  await page.getByRole('heading', { name: 'Source' }).waitFor();
  return page;
}

async function upload(page: Page, name: string, body: string) {
  await page.getByLabel('Export file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(body) });
}

const countOf = (page: Page, status: string) => page.locator(`dd[data-status="${status}"]`).first().textContent();

beforeAll(async () => {
  acme = await createTenant(viewer.api, 'Acme');
  await viewer.db.admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, os_type)
     SELECT :orgId::uuid, :siteId::uuid, 'wks-' || lpad(i::text, 5, '0'), 'windows' FROM generate_series(0, :last::int) AS i`,
    { orgId: acme.orgId, siteId: acme.siteId, last: deviceCount - 1 },
  );
});

describe.runIf(browserAvailable())('the custom-field import wizard', () => {
  it('imports field definitions from a Datto RMM UDF list: preview with proposed keys, then commit', async () => {
    const page = await openWizard(acme);
    expect(await page.getByRole('link', { name: 'Import custom fields' }).getAttribute('aria-current')).toBe('page');
    await page.getByLabel('Field definitions').check();
    await page.getByLabel('Source system').selectOption('datto-rmm');
    await page.getByRole('button', { name: 'Next' }).click();
    await upload(page, 'udfs.csv', 'udf,label\nudf1,Asset Tag\nudf2,Seats\nudf3,\n');
    await page.getByText('udfs.csv: 3 rows').waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('heading', { name: 'Preview' }).waitFor();
    const rows = page.getByRole('table', { name: 'Rows' }).locator('tbody tr');
    await rows.first().waitFor();
    expect(await rows.allInnerTexts()).toEqual([
      expect.stringMatching(/^1\tAsset Tag\tcreate\tasset_tag \(text\)/),
      expect.stringMatching(/^2\tSeats\tcreate\tseats \(text\)/),
      expect.stringMatching(/^3\t\tinvalid\t/),
    ]);
    expect(await countOf(page, 'create')).toBe('2');
    const { rows: none } = await viewer.db.admin.query('SELECT 1 FROM custom_field_definitions');
    expect(none).toEqual([]);
    await page.getByRole('button', { name: 'Commit 2 fields' }).click();
    await page.getByRole('heading', { name: 'Result' }).waitFor(slow);
    await page.getByText('2 rows applied in full, 1 not applied').waitFor();
    const { rows: stored } = await viewer.db.admin.query<{ key: string; externalId: string }>(
      `SELECT key, external_id AS "externalId" FROM custom_field_definitions WHERE partner_id = :partnerId::uuid ORDER BY key`,
      { partnerId: acme.partnerId },
    );
    expect(stored).toEqual([
      { key: 'asset_tag', externalId: 'udf1' },
      { key: 'seats', externalId: 'udf2' },
    ]);
  });

  it('imports 5,000 rows of values: suggested mapping, preview with counts and filters, commit with progress, CSV of rows not applied', async () => {
    // Seats as a number: the file's text is read for the field's type.
    const { rows: seats } = await viewer.db.admin.query<{ id: string }>(
      `SELECT id FROM custom_field_definitions WHERE partner_id = :partnerId::uuid AND key = 'seats'`,
      { partnerId: acme.partnerId },
    );
    await viewer.db.admin.query(`DELETE FROM custom_field_definitions WHERE id = :id::uuid`, { id: seats[0]!.id });
    const created = await viewer.api.request('POST', '/api/v1/custom-fields', {
      token: acme.partnerToken,
      body: { name: 'Seats', key: 'seats', type: 'number' },
    });
    expect(created.status).toBe(201);

    const page = await openWizard(acme);
    await page.getByLabel('Field values').check();
    await page.getByLabel('Source system').selectOption('generic');
    await page.getByRole('button', { name: 'Next' }).click();
    await upload(page, 'values.csv', valuesCsv);
    await page.getByText('values.csv: 5,000 rows, 4 columns').waitFor(slow);
    await page.getByRole('button', { name: 'Next' }).click();

    await page.getByRole('heading', { name: 'Map columns' }).waitFor(slow);
    expect(await page.getByLabel('Hostname').inputValue()).toBe('hostname');
    expect(await page.getByLabel('Asset Tag').inputValue()).toBe('field:asset_tag');
    expect(await page.getByLabel('Seats').inputValue()).toBe('field:seats');
    expect(await page.getByLabel('Colour').inputValue()).toBe('');
    await page.getByRole('button', { name: 'Preview' }).click();

    await page.getByRole('button', { name: /^Commit/ }).waitFor(slow);
    expect(await countOf(page, 'set')).toBe('9,997');
    expect(await countOf(page, 'invalid')).toBe('1');
    expect(await countOf(page, 'no-device')).toBe('1');
    expect(await page.getByRole('button', { name: 'All rows (5,000)' }).getAttribute('aria-pressed')).toBe('true');
    expect(await page.getByText('Showing the first 500 of 5,000 rows.').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'invalid (1)' }).click();
    const rows = page.getByRole('table', { name: 'Rows' }).locator('tbody tr');
    expect(await rows.allInnerTexts()).toEqual([
      expect.stringMatching(/^11\tWKS-00010\tinvalid\t.*"many" is not a number/),
    ]);
    await page.getByRole('button', { name: 'no-device (1)' }).click();
    expect(await rows.allInnerTexts()).toEqual([expect.stringMatching(/^21\tGHOST-01\tno-device\tNo enrolled device/)]);
    const { rows: before } = await viewer.db.admin.query('SELECT 1 FROM device_custom_field_values');
    expect(before).toEqual([]);

    await page.getByRole('button', { name: 'Commit 9,997 values' }).click();
    await page.getByRole('heading', { name: 'Commit' }).waitFor();
    const bar = page.locator('progress#import-progress');
    // The bar moves request by request (five of 1,000 rows) before the result shows.
    const seen = new Set<number>();
    for (
      const deadline = Date.now() + 60_000;
      Date.now() < deadline && !(await page.getByRole('heading', { name: 'Result' }).isVisible());
    ) {
      const value = Number(await bar.getAttribute('value').catch(() => null));
      if (value > 0 && value < 5000) seen.add(value);
      await new Promise((wait) => setTimeout(wait, 25));
    }
    expect([...seen].length).toBeGreaterThan(0);
    expect(await bar.getAttribute('max')).toBe('5000');
    await page.getByRole('heading', { name: 'Result' }).waitFor(slow);
    await page.getByText('4,998 rows applied in full, 2 not applied').waitFor();
    expect(await bar.getAttribute('value')).toBe(await bar.getAttribute('max'));
    expect(await countOf(page, 'set')).toBe('9,997');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download the 2 rows not applied (CSV)' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('values-not-applied.csv');
    const csv = (await readFile((await download.path())!, 'utf8')).trim().split('\r\n');
    expect(csv[0]).toBe('row,status,reason,Hostname,Asset Tag,Seats,Colour');
    expect(csv.slice(1)).toEqual([
      expect.stringMatching(/^11,invalid,.*,WKS-00010,AT-10,many,blue$/),
      expect.stringMatching(/^21,no-device,No enrolled device.*,GHOST-01,AT-20,21,blue$/),
    ]);

    const { rows: stored } = await viewer.db.admin.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM device_custom_field_values',
    );
    expect(stored[0]!.count).toBe(9997);
    const { rows: sample } = await viewer.db.admin.query<{ key: string; value: unknown }>(
      `SELECT f.key, v.value FROM device_custom_field_values v JOIN custom_field_definitions f ON f.id = v.field_id
         JOIN devices d ON d.id = v.device_id WHERE d.hostname = 'wks-00010' ORDER BY f.key`,
    );
    expect(sample).toEqual([{ key: 'asset_tag', value: 'AT-10' }]);
    const { rows: summaries } = await viewer.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'custom_field.import.values'`,
    );
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.details).toMatchObject({
      fileName: 'values.csv',
      sha256: createHash('sha256').update(valuesCsv).digest('hex'),
      rows: 5000,
      requests: 5,
      summary: { set: 9997, invalid: 1, 'no-device': 1 },
    });
    const { rows: updates } = await viewer.db.admin.query<{ count: number; devices: number }>(
      `SELECT count(*)::int AS count, count(DISTINCT resource_id)::int AS devices FROM audit_logs WHERE action = 'device.update'`,
    );
    // One row per device changed, also where a request's transactions of 1,000 values end.
    expect(updates[0]).toEqual({ count: 4999, devices: 4999 });
  }, 180_000);

  it('resumes a commit whose request failed halfway: "Commit again" sends the rest, and the pass has one summary', async () => {
    const globex = await createTenant(viewer.api, 'Globex');
    await viewer.db.admin.query(
      `INSERT INTO devices (org_id, site_id, hostname, os_type)
       SELECT :orgId::uuid, :siteId::uuid, 'g-' || i, 'linux' FROM generate_series(0, 2499) AS i`,
      { orgId: globex.orgId, siteId: globex.siteId },
    );
    const created = await viewer.api.request('POST', '/api/v1/custom-fields', {
      token: globex.partnerToken,
      body: { name: 'Rack', key: 'rack', type: 'text' },
    });
    expect(created.status).toBe(201);
    const csv = ['hostname,rack', ...Array.from({ length: 2500 }, (_, i) => `G-${i},R${i}`)].join('\n');
    const page = await openWizard(globex);
    await page.getByLabel('Field values').check();
    let commits = 0;
    await page.route('**/api/v1/custom-fields/import/values', (route) =>
      ++commits === 2 ? route.abort('connectionreset') : route.continue(),
    );
    await page.getByLabel('Source system').selectOption('generic');
    await page.getByRole('button', { name: 'Next' }).click();
    await upload(page, 'racks.csv', csv);
    await page.getByText('racks.csv: 2,500 rows').waitFor(slow);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('heading', { name: 'Map columns' }).waitFor(slow);
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByRole('button', { name: 'Commit 2,500 values' }).click(slow);
    await page.getByText('Stopped after 1 of 3 requests').waitFor(slow);
    expect(await page.getByRole('alert').textContent()).toContain('Cannot reach the API');
    const { rows: half } = await viewer.db.admin.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM device_custom_field_values v JOIN devices d ON d.id = v.device_id
        WHERE d.org_id = :orgId::uuid`,
      { orgId: globex.orgId },
    );
    expect(half[0]!.count).toBe(1000);
    await page.getByRole('button', { name: 'Commit again' }).click();
    await page.getByRole('heading', { name: 'Result' }).waitFor(slow);
    await page.getByText('2,500 rows applied in full, 0 not applied').waitFor();
    expect(commits).toBe(4);
    const { rows: summaries } = await viewer.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'custom_field.import.values' AND org_id = :orgId::uuid`,
      { orgId: globex.orgId },
    );
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.details).toMatchObject({
      fileName: 'racks.csv',
      rows: 2500,
      requests: 3,
      summary: { set: 2500 },
    });
  }, 120_000);
});
