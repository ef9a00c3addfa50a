import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishAnchor, witnessStoreAt } from '#shared/audit-streams/witness.ts';
import { eventually } from '#test/support/live-agents.ts';
import { startHttpsReceiver, startSyslogReceiver, useReceivers } from '#test/support/siem-receivers.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';
import { seriousViolations } from './support/axe.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

const desktop = { width: 1440, height: 900 };
const phone = { width: 390, height: 844 };

describe.skipIf(!browserAvailable())('the Streaming page in a browser', () => {
  const site = useViewer();
  const local = useReceivers();
  let tenant: Tenant;
  let witnessDir: string;
  const ids: Record<string, string> = {};

  const create = async (body: Record<string, unknown>) => {
    const reply = await site.api.request('POST', '/api/v1/audit-streams', {
      token: tenant.partnerToken,
      body: { orgId: tenant.orgId, ...body },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    return reply.body.id as string;
  };
  const open = async (viewport = desktop) => {
    const page = await site.open(`/streaming.html#token=${tenant.partnerToken}`, viewport);
    // The first drawing waits on four API calls: on a loaded machine longer than an interaction's default.
    await page.locator('.destination table').first().waitFor({ timeout: 20_000 });
    await page.locator('#witness dl').waitFor({ timeout: 20_000 });
    return page;
  };

  beforeAll(async () => {
    witnessDir = await mkdtemp(join(tmpdir(), 'logbook-witness-'));
    process.env.AUDIT_WITNESS = witnessDir;
    tenant = await createTenant(site.api, 'Kramerica');
    const https = local.keep(await startHttpsReceiver(local.cert));
    const down = local.keep(await startSyslogReceiver());
    await down.down();
    ids.https = await create({
      name: 'Sentinel',
      type: 'https',
      format: 'cef',
      endpoint: https.endpoint,
      caCertificate: local.cert.cert,
      streams: ['audit', 'device-events'],
    });
    ids.down = await create({ name: 'Old syslog', type: 'syslog-tcp', format: 'rfc5424', endpoint: down.endpoint });
    // A change audited after both exist: the first delivers it, the second fails on a receiver that is down.
    await site.api.request('PATCH', `/api/v1/audit-streams/${ids.https}`, {
      token: tenant.partnerToken,
      body: { name: 'Sentinel SIEM' },
    });
    await eventually(async () => {
      const reply = await site.api.request('GET', `/api/v1/audit-streams/${ids.down}/status`, {
        token: tenant.partnerToken,
      });
      return Boolean(reply.body.organizations[0]?.lastError);
    });
    await publishAnchor(witnessStoreAt(witnessDir), {
      orgId: tenant.orgId,
      seq: 3,
      checksum: 'c'.repeat(64),
      firstRetainedSeq: 1,
      boundaryChecksum: null,
      orgCount: 1,
      orgsDigest: 'd'.repeat(64),
      anchoredAt: new Date(Date.now() - 2 * 3600_000).toISOString(),
      keyId: '0123456789abcdef',
      signature: 'c2lnbmF0dXJl',
    });
  });
  afterAll(async () => {
    delete process.env.AUDIT_WITNESS;
    await rm(witnessDir, { recursive: true, force: true });
  });

  it('shows each destination with its state, lag and last error per stream, the witness with its age, and a test record as rendered', async () => {
    const page = await open();
    const failing = page.locator(`[data-destination="${ids.down}"]`);
    await expect(failing.locator('.stream-state').innerText()).resolves.toBe('failing');
    await expect(failing.locator('.stream-error').first().innerText()).resolves.toMatch(/ECONNREFUSED/);
    await expect(failing.locator('.stream-lag').first().innerText()).resolves.toMatch(/^\d+ rows, /);
    const working = page.locator(`[data-destination="${ids.https}"]`);
    await expect(working.locator('h3').innerText()).resolves.toBe('Sentinel SIEM');
    await expect(working.locator('tbody tr').allInnerTexts()).resolves.toEqual([
      expect.stringMatching(/Kramerica Corp\tAudit trail\t#\d+/),
      expect.stringMatching(/Kramerica Corp\tDevice event logs\t#0/),
    ]);
    const witness = await page.locator('#witness').innerText();
    expect(witness).toContain(witnessDir);
    expect(witness).toMatch(/seq 3/);
    expect(witness).toMatch(/Its age\s+2 h/);
    expect(await seriousViolations(page)).toEqual([]);

    // A test record: the line rendered in the destination format, and whether the receiver took it.
    await working.getByRole('button', { name: 'Send a test record' }).click();
    await working.getByText('The receiver took the test record.').waitFor();
    await expect(working.locator('.rendered-line').innerText()).resolves.toMatch(
      /^CEF:0\|Logbook\|Logbook\|1\|audit_stream\.test\|/,
    );
    await expect(working.getByText('Rendered as cef:').count()).resolves.toBe(1);
    await failing.getByRole('button', { name: 'Send a test record' }).click();
    await failing.getByText(/The receiver did not take it/).waitFor();
    await expect(failing.locator('.rendered-line').innerText()).resolves.toMatch(/^<110>1 .* audit_stream\.test \[/);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('fits a phone: no sideways scroll of the page, and nothing serious for axe', async () => {
    const page = await open(phone);
    await page.locator(`[data-destination="${ids.https}"]`).getByRole('button', { name: 'Send a test record' }).click();
    await page.locator('.rendered-line').waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(phone.width);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
