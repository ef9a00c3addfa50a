/**
 * `npm run docs:screenshot`: the audit viewer of a running `npm start` showing its demo trail, for the README:
 * docs/viewer.png (the list at 1280 px), docs/viewer-detail.png (an entry's detail) and docs/viewer-phone.png.
 *
 *   npm run docs:screenshot -- [--url http://localhost:3000] [--token <user token>]   (default: $PARTNER_ADMIN_TOKEN)
 */
import { parseArgs } from 'node:util';
import { launchChromium } from '#tools/chromium.ts';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://localhost:3000' },
    token: { type: 'string' },
    out: { type: 'string', default: 'docs' },
  },
});
const token = values.token ?? process.env.PARTNER_ADMIN_TOKEN;
if (!token) {
  console.error('Give a user token: --token <jwt>, or export PARTNER_ADMIN_TOKEN as npm start prints it.');
  process.exit(2);
}

const browser = await launchChromium();
try {
  const phone = await browser.newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    locale: 'en-GB',
    timezoneId: 'Europe/London',
    isMobile: true,
    hasTouch: true,
  });
  const phonePage = await phone.newPage();
  await phonePage.goto(`${values.url}/#token=${token}`);
  await phonePage.locator('table.trail tbody tr').first().waitFor();
  await phonePage.locator('.chain-ok, .chain-broken, .chain-unknown').waitFor();
  await phonePage.screenshot({ path: `${values.out}/viewer-phone.png` });

  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1,
    locale: 'en-GB',
    timezoneId: 'Europe/London',
    colorScheme: 'light',
  });
  const page = await context.newPage();
  await page.goto(`${values.url}/#token=${token}`);
  await page.locator('table.trail tbody tr').first().waitFor();
  // The demo organization's newest rows are its live agent's; Northwind's history shows the variety of a trail.
  await page.getByLabel('Organization').selectOption({ label: 'Northwind Traders' });
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/orgId=/);
  await page.locator('.chain-ok, .chain-broken, .chain-unknown').waitFor();
  await page.screenshot({ path: `${values.out}/viewer.png` });
  // A policy change shows several fields before and after in the panel.
  await page.getByLabel('Action', { exact: true }).fill('policy.update');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/action=policy.update/);
  await page.locator('.table-slot:not([aria-busy]) table.trail').waitFor();
  await page.locator('table.trail tbody tr').first().getByRole('button').click();
  await page.locator('table.diff').waitFor();
  await page.screenshot({ path: `${values.out}/viewer-detail.png` });

  console.log(`wrote viewer.png, viewer-detail.png and viewer-phone.png in ${values.out}/`);
} finally {
  await browser.close();
}
