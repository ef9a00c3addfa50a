import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Demo, seedDemo, signDemoUserTokens } from '#demo/demo.ts';
import { seedDemoPostureFleet } from '#demo/demo-posture.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

/** The two sizes every page is checked at: a laptop and a phone. */
const sizes = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

/** axe's serious and critical findings on the page as it stands: none expected. */
async function accessibilityFindings(page: Page): Promise<string[]> {
  // Evaluated through the browser's debugging protocol, which the pages' Content-Security-Policy does not govern.
  await page.evaluate(axe.source);
  const found = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  return found.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

const scrollWidth = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth');

describe.runIf(browserAvailable())('the pages of the first hour, at desktop and phone sizes', () => {
  const site = useViewer();
  let demo: Demo;
  let token: string;

  beforeAll(async () => {
    demo = await seedDemo(site.db.admin);
    await seedDemoPostureFleet(site.db.admin, demo);
    token = (await signDemoUserTokens(demo)).partnerAdmin;
  });

  describe.each(sizes)('at $name size ($width×$height)', (size) => {
    const open = (path: string) => site.open(path, size);

    it('the import wizard offers pass 1 first, each choice a small radio button beside its label', async () => {
      const page = await open(`/custom-fields-import.html#token=${token}`);
      await page.getByRole('heading', { name: 'Source' }).waitFor();
      const definitions = page.getByLabel('Field definitions (pass 1');
      expect(await definitions.isChecked()).toBe(true);
      expect(await page.getByLabel('Field values (pass 2').isChecked()).toBe(false);
      for (const label of ['Field definitions', 'Field values']) {
        const choice = page.locator('label.choice', { hasText: label });
        const radio = (await choice.locator('input[type="radio"]').boundingBox())!;
        const text = (await choice.boundingBox())!;
        expect(radio.width).toBeLessThan(30);
        // The label's text runs beside the button, on its line, not underneath it.
        expect(text.height).toBeLessThan(radio.height * 3);
        expect(radio.y).toBeGreaterThanOrEqual(text.y - 1);
        expect(radio.y + radio.height).toBeLessThanOrEqual(text.y + text.height + 1);
      }
      expect(await scrollWidth(page)).toBeLessThanOrEqual(size.width);
      expect(await accessibilityFindings(page)).toEqual([]);
    });

    it("the import wizard's counts pair each label with its own number, and one row not applied is one row", async () => {
      const page = await open(`/custom-fields-import.html#token=${token}`);
      await page.getByRole('heading', { name: 'Source' }).waitFor();
      await page.getByRole('button', { name: 'Next' }).click();
      const csv = `udf,label\nudf1,First hour ${size.name} A\nudf2,First hour ${size.name} B\nudf3,\n`;
      await page.getByLabel('Export file').setInputFiles({
        name: 'udfs.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(csv),
      });
      await page.getByText('udfs.csv: 3 rows').waitFor();
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('heading', { name: 'Preview' }).waitFor();
      const pairs = page.locator('dl.wizard-counts').first().locator('.wizard-count');
      await pairs.first().waitFor();
      for (const pair of await pairs.all()) {
        const label = (await pair.locator('dt').boundingBox())!;
        const figure = (await pair.locator('dd').boundingBox())!;
        // The number sits under its own label: the same column, just below.
        expect(Math.abs(figure.x - label.x)).toBeLessThan(2);
        expect(figure.y).toBeGreaterThan(label.y);
        expect(figure.y - (label.y + label.height)).toBeLessThan(12);
      }
      expect(await page.locator('dd[data-status="refused"]').first().textContent()).toBe('1');
      expect(await scrollWidth(page)).toBeLessThanOrEqual(size.width);
      await page.getByRole('button', { name: /^Commit 2 fields/ }).click();
      await page.getByRole('heading', { name: 'Result' }).waitFor({ timeout: 60_000 });
      await page.getByRole('button', { name: 'Download the row not applied (CSV)' }).waitFor();
      expect(await accessibilityFindings(page)).toEqual([]);
    });

    it('the Migration page fits the screen and says what is wrong with a staleness window of -5', async () => {
      const page = await open(`/migration.html#token=${token}`);
      await page.locator('#posture table.posture-chart').waitFor();
      expect(await scrollWidth(page)).toBeLessThanOrEqual(size.width);
      const stale = page.getByLabel('Stale after (days)');
      await stale.fill('-5');
      await stale.dispatchEvent('change');
      await page.getByRole('alert').getByText('Stale after takes a whole number of days from 1 to 365').waitFor();
      expect(await stale.getAttribute('aria-invalid')).toBe('true');
      expect(new URL(page.url()).searchParams.get('staleDays')).toBe('7');
      await stale.fill('1');
      await stale.dispatchEvent('change');
      await page.getByRole('list', { name: 'Coverage' }).getByText('Stale (over 1 day)').waitFor();
      expect(await stale.getAttribute('aria-invalid')).toBe('false');
      expect(await page.locator('#alert').innerText()).toBe('');
      expect(await accessibilityFindings(page)).toEqual([]);
    });

    it('a sign-in link opened in a tab showing the sign-in form signs in there', async () => {
      const page = await open('/migration.html');
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const hint = await page.locator('#token-hint').innerText();
      expect(hint).not.toContain('audit log');
      expect(await accessibilityFindings(page)).toEqual([]);
      await page.goto(`${site.url}/migration.html#token=${token}`);
      await page.locator('#posture table.posture-chart').waitFor();
      expect(new URL(page.url()).hash).toBe('');

      const viewer = await open('/');
      await viewer.getByRole('heading', { name: 'Sign in' }).waitFor();
      // As a hosted sign-in page returns: #id_token=…&token_type=Bearer.
      await viewer.goto(`${site.url}/#id_token=${token}&token_type=Bearer&expires_in=3600`);
      await viewer.getByRole('button', { name: 'Sign out' }).waitFor();
      expect(new URL(viewer.url()).hash).toBe('');
    });

    it('the audit viewer says why an inverted date range matches nothing', async () => {
      const page = await open(`/?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z#token=${token}`);
      await page.getByText('From is later than To').waitFor();
      expect(await scrollWidth(page)).toBeLessThanOrEqual(size.width);
    });
  });
});
