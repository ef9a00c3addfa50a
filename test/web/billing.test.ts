import { readFile } from 'node:fs/promises';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

/** axe-core's serious and critical findings on the page as it stands (evaluated past the page's CSP). */
async function seriousViolations(page: Page) {
  const result = (await page.evaluate(
    `(async () => { ${axe.source}; const r = await axe.run(document); return { passes: r.passes.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) })) }; })()`,
  )) as { passes: number; violations: { id: string; impact: string; nodes: string[] }[] };
  // axe ran its rules: a page it could not check would pass nothing.
  expect(result.passes).toBeGreaterThan(10);
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

describe.skipIf(!browserAvailable())('the Invoices page in a browser', () => {
  const site = useViewer();
  let tenant: Tenant;
  let contractId: string;
  let draftId: string;

  beforeAll(async () => {
    tenant = await createTenant(site.api, 'Pagebill');
    const contract = await site.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contracts`, {
      token: tenant.partnerToken,
      body: {
        currency: 'EUR',
        startDate: '2025-01-01',
        intervalMonths: 1,
        billing: 'arrears',
        timezone: 'Europe/Berlin',
        paymentTermsDays: 14,
        autoRenew: false,
        autoIssue: false,
        taxRatePercent: '19',
        lines: [
          { type: 'flat', description: 'Service desk', amount: '100.00' },
          { type: 'per-device', description: 'Managed devices', unitPrice: '4.00' },
        ],
      },
    });
    contractId = contract.body.id;
    const draft = await site.api.request('POST', `/api/v1/contracts/${contractId}/invoices`, {
      token: tenant.partnerToken,
      body: { periodStart: '2025-02-01' },
    });
    draftId = draft.body.id;
  });

  const open = async (token: string, query = '') => {
    const page = await site.open(`/invoices.html${query}#token=${token}`);
    await page.locator('#invoices table, #invoices .empty').first().waitFor();
    return page;
  };

  it('shows the contracts with their lines and estimate, and the invoices, with no serious accessibility finding', async () => {
    const page = await open(tenant.partnerToken);
    const contract = page.locator(`article.contract[data-contract="${contractId}"]`);
    await contract.locator('.estimate').waitFor();
    expect(await contract.getByRole('table', { name: 'Lines' }).locator('tbody tr').allInnerTexts()).toEqual([
      'flat\tService desk\t100\tyes',
      'per-device\tManaged devices\t4\tyes',
    ]);
    const estimate = await site.api.request('GET', `/api/v1/contracts/${contractId}/estimate`, {
      token: tenant.partnerToken,
    });
    expect(await contract.locator('.estimate').innerText()).toBe(
      `Estimate for ${estimate.body.periodStart} to ${estimate.body.periodEnd}: ${estimate.body.total} EUR`,
    );
    expect(await page.locator('#invoices tbody tr').allInnerTexts()).toEqual([
      'Draft\tInvoice\t2025-02-01 to 2025-02-28\tdraft\t119.00 EUR\tOpen',
    ]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('opens an invoice, downloads its PDF, issues it and voids it with a reason from the page', async () => {
    const page = await open(tenant.partnerToken);
    await page.getByRole('button', { name: 'Open draft for 2025-02-01' }).click();
    await page.getByRole('heading', { name: 'Invoice (draft)' }).waitFor();
    expect(await page.getByRole('table', { name: 'Lines' }).last().locator('tbody tr').first().innerText()).toBe(
      'Service desk\t28 days\t100\t100.00\t19.00\t119.00',
    );
    expect(await seriousViolations(page)).toEqual([]);
    const [pdf] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'PDF' }).click()]);
    expect((await readFile((await pdf.path())!)).subarray(0, 5).toString()).toBe('%PDF-');
    await page.getByRole('button', { name: 'Issue' }).click();
    const issued = page.getByRole('heading', { name: /^Invoice \d{4}-\d{6}$/ });
    await issued.waitFor();
    const number = (await issued.innerText()).replace('Invoice ', '');
    await page.getByLabel('Reason to void').fill('Wrong customer');
    await page.getByRole('button', { name: 'Void' }).click();
    await page.locator('.invoice-facts', { hasText: 'void: Wrong customer' }).waitFor();
    const stored = await site.api.request('GET', `/api/v1/invoices/${draftId}`, { token: tenant.partnerToken });
    expect(stored.body).toMatchObject({ status: 'void', number, voidReason: 'Wrong customer' });
    await page.getByLabel('Invoice status').selectOption('issued');
    await page.locator('#invoices tbody tr', { hasText: 'Credit note' }).waitFor();
    expect(new URL(page.url()).searchParams.get('status')).toBe('issued');
  });

  it("shows an organization's users their issued invoices only, and no contract", async () => {
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    const page = await open(viewer);
    await page.getByText('Contracts are kept by your provider').waitFor();
    const rows = await page.locator('#invoices tbody tr').allInnerTexts();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toContain('\tissued\t');
    expect(await seriousViolations(page)).toEqual([]);
  });
});
