import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type AuditInput, appendAudit, type Sealed, tamper } from '#test/shared/audit/audit-rows.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

// The browser's clock reads Asia/Kolkata (UTC+05:30): 10:40 UTC shows as 16:10.
const at = (minutes: number) => new Date(Date.parse('2025-06-02T09:00:00Z') + minutes * 60_000).toISOString();

/** A trail of 47 rows plus the enrollment's enrollment_key.create and device.create (now): 40 routine device updates, then one row of each kind. */
function trail(orgId: string, agentId: string) {
  const fillers: AuditInput[] = Array.from({ length: 40 }, (_, i) => {
    const alice = i % 2 === 0;
    return {
      orgId,
      timestamp: at(i),
      action: 'device.update',
      actorEmail: alice ? 'alice@acme.test' : 'bob@acme.test',
      resourceName: `WS-${String(i).padStart(2, '0')}`,
      details: { actor: { name: alice ? 'Alice Archer' : 'Bob Brown', role: 'org_technician' } },
    };
  });
  const kinds = {
    failedLogin: {
      action: 'user.login.failed',
      result: 'failure',
      errorMessage: 'Invalid password',
      actorEmail: 'mallory@acme.test',
      resourceType: 'user',
      resourceName: 'mallory@acme.test',
    },
    denied: {
      action: 'script.execute',
      result: 'denied',
      errorMessage: 'Missing permission scripts:execute',
      resourceType: 'script',
      resourceName: 'Clear print spooler',
    },
    unknownCode: { action: 'policy.assign', resourceType: 'policy', resourceName: 'Patch ring 1' },
    agent: {
      action: 'agent.source.ip.changed',
      actorType: 'agent',
      actorId: agentId,
      actorEmail: null,
      resourceName: 'WS-ALPHA-07',
      details: { previousIp: '203.0.113.7', ip: '198.51.100.9' },
      ipAddress: '198.51.100.9',
    },
    changed: {
      action: 'device.update',
      resourceName: 'FS-01',
      details: {
        actor: { name: 'Alice Archer' },
        before: { displayName: 'File server', siteName: 'Head Office' },
        after: { displayName: 'File server (old)', siteName: 'Warehouse' },
      },
    },
    searchable: {
      action: 'alert.acknowledge',
      resourceType: 'alert',
      resourceName: 'Disk C: 95% full',
      details: { ticket: 'INC-4711', before: { status: 'open' }, after: { status: 'acknowledged' } },
    },
    hostile: {
      action: 'device.update',
      resourceName: '<img src=x onerror="window.__xss=1">',
      actorEmail: '"><script>window.__xss=2</script>',
      details: { note: '<script>window.__xss=3</script>' },
    },
  } satisfies Record<string, Omit<AuditInput, 'orgId'>>;
  const specials = Object.values(kinds).map((kind, k): AuditInput => ({ orgId, timestamp: at(100 + k), ...kind }));
  return { rows: [...fillers, ...specials], kinds: Object.keys(kinds) as (keyof typeof kinds)[] };
}

async function seededTenant(
  api: Parameters<typeof createTenant>[0],
  db: { admin: Parameters<typeof appendAudit>[0] },
  name: string,
) {
  const tenant = await createTenant(api, name);
  const device = await enrollDevice(api, tenant, 'WS-ALPHA-07');
  const { rows, kinds } = trail(tenant.orgId, device.agentId);
  const sealed = await appendAudit(db.admin, rows);
  const byKind = Object.fromEntries(kinds.map((kind, k) => [kind, sealed[40 + k]!])) as Record<
    (typeof kinds)[number],
    Sealed
  >;
  return { tenant, byKind };
}

const rows = (page: Page) => page.locator('table.trail tbody tr');
const rowWith = (page: Page, text: string) => rows(page).filter({ hasText: text });
const cells = (page: Page, text: string) => rowWith(page, text).locator('td').allInnerTexts();
const summary = (page: Page) => page.locator('.summary').textContent();
const signedIn = (path: string, tenant: Tenant) => `${path}#token=${tenant.orgToken}`;

/** Waits until the page shows a list it finished loading. */
async function shown(page: Page) {
  await page.locator('.table-slot:not([aria-busy])').locator('table.trail, .empty').first().waitFor();
}

describe.skipIf(!browserAvailable())('the audit-log viewer in a browser', () => {
  const viewer = useViewer();
  // `reader`'s trail is only read; `auditor` opens entries and exports, which the trail records (data.access, data.export).
  let reader: Awaited<ReturnType<typeof seededTenant>>;
  let auditor: Awaited<ReturnType<typeof seededTenant>>;
  beforeAll(async () => {
    [reader, auditor] = await Promise.all([
      seededTenant(viewer.api, viewer.db, 'Reader'),
      seededTenant(viewer.api, viewer.db, 'Auditor'),
    ]);
  });

  it('shows each entry with its local time, actor, action in words, resource, result and IP', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant));
    await shown(page);
    expect(await cells(page, 'failed login')).toEqual([
      '02 Jun 2025, 16:10:00',
      'mallory@acme.test',
      'failed login',
      'mallory@acme.test\nuser',
      '✕ Failed',
      '203.0.113.7',
    ]);
    expect(await rowWith(page, 'failed login').locator('time').getAttribute('title')).toBe(
      '2025-06-02T10:40:00.000000Z',
    );
    expect(await cells(page, 'Clear print spooler')).toEqual([
      '02 Jun 2025, 16:11:00',
      'tech@example.com',
      'ran script',
      'Clear print spooler\nscript',
      '⊘ Denied',
      '203.0.113.7',
    ]);
    expect((await cells(page, 'WS-39'))[1]).toBe('Bob Brown\nbob@acme.test');
    expect((await cells(page, 'WS-39'))[4]).toBe('✓ Success');
  });

  it('words unknown action codes by rule instead of showing them raw', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant));
    await shown(page);
    expect((await cells(page, 'Patch ring 1'))[2]).toBe('assigned policy');
    expect(await page.locator('table.trail').textContent()).not.toMatch(/policy\.assign|user\.login|device\.update/);
  });

  it("shows the device's hostname with an agent actor", async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant));
    await shown(page);
    expect((await cells(page, 'created device')).slice(1, 3)).toEqual(['WS-ALPHA-07\nDevice agent', 'created device']);
    expect((await cells(page, 'changed source IP')).slice(1, 3)).toEqual([
      'WS-ALPHA-07\nDevice agent',
      'changed source IP',
    ]);
  });

  it('keeps filters in the URL: a reload and a shared link show the same rows, and Back returns to the whole trail', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant));
    await shown(page);
    expect(await summary(page)).toBe('Rows 1–10 of 49');
    await page.getByLabel('Action', { exact: true }).fill('login');
    await page.getByLabel('User', { exact: true }).fill('MALLORY');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/\?user=MALLORY&action=login&limit=10$/);
    await shown(page);
    expect(await rows(page).allInnerTexts()).toHaveLength(1);
    expect((await cells(page, 'mallory'))[2]).toBe('failed login');

    await page.reload();
    await shown(page);
    expect(await page.getByLabel('Action', { exact: true }).inputValue()).toBe('login');
    expect(await summary(page)).toBe('Rows 1–1 of 1');

    const shared = await viewer.open(signedIn(new URL(page.url()).search, reader.tenant));
    await shown(shared);
    expect(await rows(shared).allInnerTexts()).toEqual(await rows(page).allInnerTexts());

    await page.goBack();
    await page.waitForURL(/\?limit=10$/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 1–10 of 49');
    expect(await page.getByLabel('Action', { exact: true }).inputValue()).toBe('');
  });

  it('filters a time range given in local time, and the link holds it as UTC', async () => {
    const page = await viewer.open(signedIn('/?limit=25', reader.tenant));
    await shown(page);
    await page.getByLabel('From', { exact: true }).fill('2025-06-02T14:50');
    await page.getByLabel('To', { exact: true }).fill('2025-06-02T14:54');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/from=2025-06-02T09%3A20%3A00\.000Z&to=2025-06-02T09%3A24%3A59\.999999Z/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 1–5 of 5');
    expect(await rows(page).locator('.resource .primary').allInnerTexts()).toEqual([
      'WS-24',
      'WS-23',
      'WS-22',
      'WS-21',
      'WS-20',
    ]);
  });

  it('searches details too, and says whether more follow instead of counting every match', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant));
    await shown(page);
    await page.getByRole('searchbox', { name: 'Search' }).fill('INC-4711');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=INC-4711/);
    await shown(page);
    expect(await rows(page).locator('.open-entry').allInnerTexts()).toEqual(['acknowledged alert']);

    await page.getByRole('searchbox', { name: 'Search' }).fill('acme.test');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=acme\.test/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 1–10, more follow');
    expect(await page.locator('.page-position').textContent()).toBe('Page 1 of more');
    await page.getByRole('link', { name: 'Next ›' }).click();
    await page.waitForURL(/page=2/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 11–20, more follow');
  });

  it('pages through the trail with its total, and changes the page size', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant));
    await shown(page);
    expect(await page.locator('.page-position').textContent()).toBe('Page 1 of 5');
    const firstPage = await rows(page).allInnerTexts();
    await page.getByRole('link', { name: 'Next ›' }).click();
    await page.waitForURL(/page=2/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 11–20 of 49');
    expect(await rows(page).allInnerTexts()).not.toEqual(firstPage);
    expect(await rows(page).locator('.resource .primary').first().textContent()).toBe('WS-38');

    await page.getByRole('link', { name: 'Last »' }).click();
    await page.waitForURL(/page=5/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 41–49 of 49');
    expect(await page.getByRole('link', { name: 'Next ›' }).count()).toBe(0);

    await page.getByLabel('Rows per page').selectOption('25');
    await page.waitForURL(/\?limit=25$/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 1–25 of 49');
  });

  it('leads a link past the last page back to the last page', async () => {
    const page = await viewer.open(signedIn('/?limit=10&page=9', reader.tenant));
    await shown(page);
    expect(await page.locator('.table-slot').textContent()).toBe('This page lies beyond the end of the list.');
    expect(await page.getByRole('link', { name: '‹ Previous' }).getAttribute('href')).toBe('?page=5&limit=10');
    await page.getByRole('link', { name: 'Last »' }).click();
    await page.waitForURL(/\?page=5&limit=10$/);
    await shown(page);
    expect(await summary(page)).toBe('Rows 41–49 of 49');
  });

  it('opens an entry from the keyboard with its before/after values side by side and the raw details; Escape closes it', async () => {
    const page = await viewer.open(signedIn('/?limit=10', auditor.tenant));
    await shown(page);
    const button = rowWith(page, 'FS-01').getByRole('button', { name: 'updated device' });
    await button.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`entry=${auditor.byKind.changed.id}`));
    const panel = page.locator('#detail');
    await panel.locator('table.diff').waitFor();
    await page.locator('#detail-title:focus').waitFor();
    expect(await panel.getByRole('heading', { level: 2 }).textContent()).toBe('updated device');
    expect(
      await panel
        .locator('table.diff tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => cell.textContent))),
    ).toEqual([
      ['displayName (changed)', 'File server', 'File server (old)'],
      ['siteName (changed)', 'Head Office', 'Warehouse'],
    ]);
    expect(await panel.locator('pre.raw').textContent()).toContain('"displayName": "File server (old)"');

    await page.keyboard.press('Escape');
    await page.waitForURL((url) => !url.search.includes('entry='));
    expect(await panel.isHidden()).toBe(true);
    expect(await page.evaluate('document.activeElement?.closest("tr")?.dataset.id')).toBe(auditor.byKind.changed.id);
  });

  it('renders names and details as text, never as markup', async () => {
    const page = await viewer.open(signedIn('/?limit=10', auditor.tenant));
    await shown(page);
    const row = rowWith(page, 'onerror');
    expect(await row.locator('.resource .primary').textContent()).toBe('<img src=x onerror="window.__xss=1">');
    expect(await row.locator('.actor .primary').textContent()).toBe('"><script>window.__xss=2</script>');
    await row.getByRole('button').click();
    await page.locator('#detail pre.raw').filter({ hasText: 'window.__xss=3' }).waitFor();
    expect(await page.locator('#detail pre.raw').textContent()).toContain('"note": "<script>window.__xss=3</script>"');
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate('window.__xss')).toBeUndefined();
  });

  it('exports the filtered view as CSV and as JSON', async () => {
    const page = await viewer.open(signedIn('/?action=device.update', auditor.tenant));
    await shown(page);
    expect(await summary(page)).toBe('Rows 1–42 of 42');

    const [csvDownload] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    expect(csvDownload.suggestedFilename()).toMatch(/^audit-logs-\d{8}T\d{6}Z\.csv$/);
    const [header, ...lines] = (await readFile((await csvDownload.path())!, 'utf8')).trimEnd().split('\r\n');
    expect(header!.split(',')).toEqual(expect.arrayContaining(['id', 'seq', 'action', 'resourceName', 'checksum']));
    expect(lines).toHaveLength(42);
    expect(lines.every((line) => line.includes(',device.update,'))).toBe(true);
    await page.getByText(`Downloaded ${csvDownload.suggestedFilename()}.`).waitFor();

    const [jsonDownload] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export JSON' }).click(),
    ]);
    const exported = JSON.parse(await readFile((await jsonDownload.path())!, 'utf8')) as {
      filters: Record<string, string>;
      rows: { action: string }[];
    };
    expect(exported.filters).toMatchObject({ action: 'device.update' });
    expect(exported.rows.map((row) => row.action)).toEqual(Array(42).fill('device.update'));
  });

  it('signs in with a pasted token, and says why a refused token was refused instead of showing a blank page', async () => {
    const page = await viewer.open('/');
    await page.getByLabel('Access token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'refused the token (401' }).waitFor();
    expect(await page.getByLabel('Access token').isVisible()).toBe(true);

    await page.getByLabel('Access token').fill(reader.tenant.orgToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await shown(page);
    expect(await page.locator('.account').textContent()).toContain('Org User');
    expect(await rows(page).count()).toBe(49);
  });

  it('says so when the API cannot be reached, and shows the list once it answers again', async () => {
    const unreachable = /\/api\/v1\/audit-logs\?/;
    const page = await viewer.open(signedIn('/', reader.tenant), {
      prepare: (p) => p.route(unreachable, (route) => route.abort('connectionrefused')),
    });
    await page
      .getByRole('alert')
      .filter({ hasText: `Cannot reach the API at ${viewer.url}` })
      .waitFor();
    await page.unroute(unreachable);
    await page.getByRole('button', { name: 'Try again' }).click();
    await shown(page);
    expect(await rows(page).count()).toBe(49);
    expect(await page.locator('#alert').textContent()).toBe('');
  });

  it('calls the API that config.json beside the page names', async () => {
    const seen: string[] = [];
    const page = await viewer.open(signedIn('/', reader.tenant), {
      prepare: async (p) => {
        await p.route('**/config.json', (route) =>
          route.fulfill({ json: { apiBaseUrl: 'https://api.example.test/' } }),
        );
        await p.route('https://api.example.test/**', (route) => {
          const request = route.request();
          const cors = { 'access-control-allow-origin': viewer.url, 'access-control-allow-headers': 'authorization' };
          if (request.method() === 'OPTIONS') return route.fulfill({ status: 204, headers: cors });
          const path = new URL(request.url()).pathname;
          seen.push(`${path} ${request.headers().authorization?.slice(0, 7)}`);
          const entry = {
            id: '00000000-0000-4000-8000-0000000000e1',
            timestamp: '2025-06-02T10:40:00.000000Z',
            action: 'device.delete',
            resource: 'FROM-CONFIG',
            resourceType: 'device',
            details: '{}',
            ipAddress: '',
            userAgent: '',
            sessionId: null,
            user: { name: 'Cara', email: '', role: '', department: '' },
            changes: { before: {}, after: {} },
            orgId: reader.tenant.orgId,
            seq: 1,
            actorType: 'user',
            actorHostname: null,
            category: 'device',
            result: 'success',
          };
          const body = path.endsWith('/audit-logs')
            ? {
                entries: [entry],
                pagination: { page: 1, limit: 50, total: 1, totalPages: 1, hasMore: false, totalExact: true },
              }
            : path.endsWith('/verify')
              ? { ok: true, checked: 1, head: null }
              : { data: [], pagination: { page: 1, limit: 100, total: 0, totalPages: 0 } };
          return route.fulfill({ json: body, headers: cors });
        });
      },
    });
    await shown(page);
    expect((await cells(page, 'FROM-CONFIG')).slice(1, 3)).toEqual(['Cara', 'deleted device']);
    expect(seen).toContain('/api/v1/audit-logs Bearer ');
  });

  it('fits a phone: no sideways scrolling, each entry a labelled card, the filters folded away', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant), { width: 390, height: 844 });
    await shown(page);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(
      await page.evaluate(
        'getComputedStyle(document.querySelector("tbody td[data-label=Action]"), "::before").content',
      ),
    ).toBe('"Action"');
    expect(await page.getByLabel('User', { exact: true }).isVisible()).toBe(false);
    await page.getByText('Filters', { exact: true }).click();
    expect(await page.getByLabel('User', { exact: true }).isVisible()).toBe(true);

    const wide = await viewer.open(signedIn('/?limit=10', reader.tenant), { width: 1280, height: 800 });
    await shown(wide);
    expect(await wide.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(1280);
  });

  it('shows cards on a tablet too, where seven columns would not fit', async () => {
    const page = await viewer.open(signedIn('/?limit=10', reader.tenant), { width: 800, height: 1024 });
    await shown(page);
    expect(
      await page.evaluate(
        'getComputedStyle(document.querySelector("tbody td[data-label=Action]"), "::before").content',
      ),
    ).toBe('"Action"');
    expect(await page.locator('.table-slot').evaluate((slot) => slot.scrollWidth - slot.clientWidth)).toBe(0);
    expect(await page.getByLabel('User', { exact: true }).isVisible()).toBe(true);
  });

  it('shows the hash chain of the rows shown as intact, and where it breaks once a row is altered', async () => {
    const page = await viewer.open(signedIn('/?limit=10', auditor.tenant));
    await shown(page);
    await page.getByText(/^✓ Chain intact for the rows shown: \d+ rows rechecked/).waitFor();

    const altered = auditor.byKind.unknownCode;
    await tamper(viewer.db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET resource_name = 'Patch ring 2' WHERE id = :id::uuid`, { id: altered.id }),
    );
    await page.reload();
    await shown(page);
    await page.getByText(`Chain broken at seq ${altered.seq}: a row was altered.`).waitFor();
    await page.getByRole('button', { name: 'Show that entry' }).click();
    await page.waitForURL(new RegExp(`entry=${altered.id}`));
    expect(await page.locator('#detail h2').textContent()).toBe('assigned policy');
  });
});
