import { beforeAll, describe, expect, it } from 'vitest';
import { runDueInvoices } from '#shared/billing/due-run.ts';
import { appDb } from '#shared/db/client.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, partnerUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;

const contractsPath = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/contracts`;

const baseContract = {
  currency: 'EUR',
  startDate: '2024-01-31',
  intervalMonths: 1,
  billing: 'arrears',
  timezone: 'Europe/Berlin',
  paymentTermsDays: 30,
  autoRenew: false,
  autoIssue: false,
  taxRatePercent: '19',
};

async function createContract(body: Record<string, unknown>, who = tenant) {
  const reply = await t.api.request('POST', contractsPath(who.orgId), { token: who.partnerToken, body });
  if (reply.status !== 201) throw new Error(`contract: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/** A device of the tenant with its enrollment and deletion at given instants, as history seeded behind the API. */
async function seedDevice(
  hostname: string,
  createdAt: string,
  deletedAt: string | null = null,
  os = 'Windows 11',
  who = tenant,
) {
  const { rows } = await t.db.admin.query<{ id: string }>(
    `INSERT INTO devices (org_id, site_id, hostname, os_type, os_version, created_at, deleted_at)
     VALUES (:orgId::uuid, :siteId::uuid, :hostname::text, 'windows', :os::text, :createdAt::timestamptz, :deletedAt::timestamptz)
     RETURNING id`,
    { orgId: who.orgId, siteId: who.siteId, hostname, os, createdAt, deletedAt },
  );
  return rows[0]!.id;
}

async function auditRows(action: string, resourceId: string) {
  const { rows } = await t.db.admin.query<{ details: Record<string, unknown>; seq: number }>(
    'SELECT details, seq FROM audit_logs WHERE action = :action::text AND resource_id = :resourceId::uuid ORDER BY seq',
    { action, resourceId },
  );
  return rows;
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
});

describe('contracts', () => {
  it('are created with their lines and next period, audited as contract.create', async () => {
    const created = await createContract({
      ...baseContract,
      lines: [
        { type: 'flat', description: 'Service desk', amount: '100.00' },
        { type: 'per-device', description: 'Managed devices', unitPrice: '4.00', siteId: tenant.siteId, taxable: true },
      ],
    });
    expect(created).toMatchObject({
      orgId: tenant.orgId,
      partnerId: tenant.partnerId,
      status: 'active',
      currency: 'EUR',
      taxRatePercent: '19',
      nextPeriod: { start: '2024-01-31', end: '2024-02-28' },
      nextDueOn: '2024-02-29',
      lines: [
        { type: 'flat', amount: '100', unitPrice: null, taxable: true },
        { type: 'per-device', unitPrice: '4', siteId: tenant.siteId },
      ],
    });
    const [audit] = await auditRows('contract.create', created.id);
    expect(audit!.details).toMatchObject({ after: { status: 'active', taxRatePercent: '19' } });
    const read = await t.api.request('GET', `/api/v1/contracts/${created.id}`, { token: tenant.partnerToken });
    expect(read.body).toEqual(created);
  });

  it('are created once for an Idempotency-Key sent twice', async () => {
    const body = { ...baseContract, lines: [{ type: 'flat', description: 'Once', amount: '7' }] };
    const send = () =>
      t.api.request('POST', contractsPath(tenant.orgId), {
        token: tenant.partnerToken,
        body,
        headers: { 'idempotency-key': 'contract-once-1' },
      });
    const first = await send();
    const again = await send();
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await auditRows('contract.create', first.body.id)).toHaveLength(1);
  });

  it('refuse bad fields with a 400 naming them, and store nothing', async () => {
    const line = { type: 'per-device', description: 'Devices', unitPrice: '4.00' };
    for (const [body, path] of [
      [{ ...baseContract, currency: 'EURO', lines: [line] }, 'body.currency'],
      [{ ...baseContract, startDate: '2023-02-29', lines: [line] }, 'body.startDate'],
      [{ ...baseContract, intervalMonths: 2, lines: [line] }, 'body.intervalMonths'],
      [{ ...baseContract, timezone: 'Mars/Olympus', lines: [line] }, 'body.timezone'],
      [{ ...baseContract, lines: [{ ...line, unitPrice: 4.1 }] }, 'body.lines.0.unitPrice'],
      [{ ...baseContract, lines: [{ ...line, unitPrice: '0.1234567' }] }, 'body.lines.0.unitPrice'],
      [
        { ...baseContract, lines: [{ type: 'included-overage', description: 'x', unitPrice: '1' }] },
        'body.lines.0.includedQuantity',
      ],
      [{ ...baseContract, lines: [{ type: 'flat', description: 'x' }] }, 'body.lines.0.amount'],
      [{ ...baseContract, lines: [{ ...line, siteId: other.siteId }] }, 'body.lines.0.siteId'],
      [{ ...baseContract, endDate: '2024-01-01', lines: [line] }, 'body.endDate'],
    ] as const) {
      const reply = await t.api.request('POST', contractsPath(tenant.orgId), { token: tenant.partnerToken, body });
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const { rows } = await t.db.admin.query(
      "SELECT 1 FROM contracts WHERE org_id = :orgId::uuid AND currency <> 'EUR' OR start_date = '2023-03-01'",
      { orgId: tenant.orgId },
    );
    expect(rows).toHaveLength(0);
  });

  it('are changed with PATCH, replaced lines kept out of the next invoice, audited with before and after', async () => {
    const created = await createContract({
      ...baseContract,
      startDate: '2025-01-01',
      lines: [{ type: 'flat', description: 'Old', amount: '10' }],
    });
    const changed = await t.api.request('PATCH', `/api/v1/contracts/${created.id}`, {
      token: tenant.partnerToken,
      body: { taxRatePercent: 7.5, lines: [{ type: 'flat', description: 'New', amount: '20' }] },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ taxRatePercent: '7.5', lines: [{ description: 'New', amount: '20' }] });
    const [audit] = await auditRows('contract.update', created.id);
    expect(audit!.details).toMatchObject({
      before: { taxRatePercent: '19', lines: [{ description: 'Old' }] },
      after: { taxRatePercent: '7.5', lines: [{ description: 'New' }] },
    });
    const estimate = await t.api.request('GET', `/api/v1/contracts/${created.id}/estimate?period=2025-01-01`, {
      token: tenant.partnerToken,
    });
    expect(estimate.body).toMatchObject({ subtotal: '20.00', tax: '1.50', total: '21.50' });
    const empty = await t.api.request('PATCH', `/api/v1/contracts/${created.id}`, {
      token: tenant.partnerToken,
      body: {},
    });
    expect(empty.status).toBe(400);
  });

  it("are the partner's: organization users and technicians are refused, another tenant gets a 404", async () => {
    const body = { ...baseContract, lines: [{ type: 'flat', description: 'x', amount: '1' }] };
    const orgReply = await t.api.request('POST', contractsPath(tenant.orgId), { token: tenant.orgToken, body });
    expect(orgReply.status).toBe(403);
    const technician = await partnerUser(tenant.partnerId, 'partner_technician');
    expect((await t.api.request('POST', contractsPath(tenant.orgId), { token: technician, body })).status).toBe(403);
    const reader = await partnerUser(tenant.partnerId, 'partner_technician', {
      permissions: ['orgs:read', 'billing:read'],
    });
    expect((await t.api.request('GET', contractsPath(tenant.orgId), { token: reader })).status).toBe(200);
    expect((await t.api.request('POST', contractsPath(tenant.orgId), { token: reader, body })).status).toBe(403);
    expect((await t.api.request('POST', contractsPath(tenant.orgId), { token: other.partnerToken, body })).status).toBe(
      404,
    );
    const mine = await createContract(body);
    expect((await t.api.request('GET', `/api/v1/contracts/${mine.id}`, { token: other.partnerToken })).status).toBe(
      404,
    );
  });
});

describe('invoices', () => {
  it('bill device-days in the billing time zone across a leap day and a DST change, rounded half to even per line', async () => {
    const org = await createTenant(t.api, 'Leap');
    const contract = await createContract(
      {
        ...baseContract,
        lines: [
          { type: 'flat', description: 'Service desk', amount: '100.00' },
          { type: 'per-device', description: 'Managed devices', unitPrice: '4.00' },
          {
            type: 'included-overage',
            description: 'Beyond one device',
            includedQuantity: 1,
            unitPrice: '2.50',
            taxable: false,
          },
        ],
      },
      org,
    );
    await seedDevice('always', '2024-01-10T09:00:00Z', null, 'Windows 11', org);
    await seedDevice('ten-days', '2024-03-10T10:00:00Z', '2024-03-20T10:00:00Z', 'Windows 11', org);
    // 23:30 UTC on Mar 30 is 00:30 on Mar 31 in Berlin, the first day of the next period.
    await seedDevice('next-period', '2024-03-30T23:30:00Z', null, 'Windows 11', org);
    // The leap day, from 00:30 to 23:59 in Berlin.
    await seedDevice('leap-day', '2024-02-28T23:30:00Z', '2024-02-29T22:59:00Z', 'Windows 11', org);
    await seedDevice('gone-before', '2024-01-05T09:00:00Z', '2024-02-28T22:00:00Z', 'Windows 11', org);
    const reply = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: '2024-02-29' },
    });
    expect(reply.status).toBe(201);
    // Feb 29 to Mar 30: 31 days. Device-days 31 + 11 + 1 = 43.
    expect(reply.body).toMatchObject({
      status: 'draft',
      number: null,
      periodStart: '2024-02-29',
      periodEnd: '2024-03-30',
    });
    expect(reply.body.lines.map((l: Record<string, unknown>) => [l.quantity, l.amount, l.tax])).toEqual([
      ['31', '100.00', '19.00'],
      // 4.00 × 43 / 31 = 5.548… → 5.55; tax 1.0545 → 1.05
      ['43', '5.55', '1.05'],
      // (43 − 31) × 2.50 / 31 = 0.967… → 0.97, untaxed
      ['12', '0.97', '0.00'],
    ]);
    expect(reply.body).toMatchObject({ subtotal: '106.52', tax: '20.05', total: '126.57' });
    const statement = await t.api.request('GET', `/api/v1/invoices/${reply.body.id}/usage-statement`, {
      token: org.partnerToken,
    });
    expect(
      statement.body.devices.map((d: Record<string, unknown>) => [d.hostname, d.firstDay, d.lastDay, d.days]),
    ).toEqual([
      ['always', '2024-02-29', '2024-03-30', 31],
      ['leap-day', '2024-02-29', '2024-02-29', 1],
      ['ten-days', '2024-03-10', '2024-03-20', 11],
    ]);
    expect(statement.body).toMatchObject({ periodDays: 31, billableDays: 31, deviceDays: 43 });
    // The first period, Jan 31 to Feb 28: 29 days, the next one Mar 31 to Apr 29: 30 days (clamped, never drifting).
    const estimate = await t.api.request('GET', `/api/v1/contracts/${contract.id}/estimate?period=2024-03-31`, {
      token: org.partnerToken,
    });
    expect(estimate.body).toMatchObject({ periodStart: '2024-03-31', periodEnd: '2024-04-29' });
    expect(estimate.body.lines[1]).toMatchObject({ periodDays: 30, deviceDays: 60 });
    const wrong = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: '2024-03-01' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.details[0].path).toBe('body.periodStart');
  });

  it('round ties to the even cent', async () => {
    const org = await createTenant(t.api, 'Ties');
    const contract = await createContract(
      {
        ...baseContract,
        startDate: '2025-01-01',
        taxRatePercent: '5',
        lines: [
          { type: 'manual', description: 'Cable', amount: '0.50' },
          { type: 'manual', description: 'Plug', amount: '0.70' },
        ],
      },
      org,
    );
    const reply = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: '2025-01-01' },
    });
    // 5 % of 0.50 is 0.025 → 0.02; of 0.70 is 0.035 → 0.04.
    expect(reply.body.lines.map((l: Record<string, unknown>) => l.tax)).toEqual(['0.02', '0.04']);
    // A manual line is billed once: the next period does not carry it.
    const next = await t.api.request('GET', `/api/v1/contracts/${contract.id}/estimate?period=2025-02-01`, {
      token: org.partnerToken,
    });
    expect(next.body.lines).toEqual([]);
  });

  it('are generated once per period however many generate at once', async () => {
    const contract = await createContract({
      ...baseContract,
      startDate: '2025-01-01',
      lines: [{ type: 'flat', description: 'Flat', amount: '10' }],
    });
    const replies = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
          token: tenant.partnerToken,
          body: { periodStart: '2025-03-01' },
        }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
    const { rows } = await t.db.admin.query('SELECT id FROM invoices WHERE contract_id = :id::uuid', {
      id: contract.id,
    });
    expect(rows).toHaveLength(1);
    expect(await auditRows('invoice.generate', replies[0]!.body.id)).toHaveLength(1);
  });

  it('are numbered without gaps per partner and year when issued at once, and an issued one is frozen', async () => {
    const org = await createTenant(t.api, 'Numbers');
    const contract = await createContract(
      { ...baseContract, startDate: '2025-01-01', lines: [{ type: 'per-device', description: 'D', unitPrice: '3' }] },
      org,
    );
    const drafts = [];
    for (const month of ['01', '02', '03', '04', '05', '06']) {
      const reply = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
        token: org.partnerToken,
        body: { periodStart: `2025-${month}-01` },
      });
      drafts.push(reply.body.id as string);
    }
    const issued = await Promise.all(
      drafts.map((id) => t.api.request('POST', `/api/v1/invoices/${id}/issue`, { token: org.partnerToken, body: {} })),
    );
    const year = issued[0]!.body.issueDate.slice(0, 4);
    expect(issued.map((r) => r.body.number).sort()).toEqual(
      [1, 2, 3, 4, 5, 6].map((n) => `${year}-${String(n).padStart(6, '0')}`),
    );
    expect(issued[0]!.body.dueDate).not.toBeNull();
    // Issued: a later generate answers it unchanged, though a device has since been enrolled.
    await seedDevice('late', '2025-01-15T10:00:00Z', null, 'Windows 11', org);
    const again = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: '2025-01-01' },
    });
    expect(again.body).toMatchObject({ id: drafts[0], status: 'issued', total: '0.00' });
    const [audit] = await auditRows('invoice.issue', drafts[0]!);
    expect(audit!.details).toMatchObject({ number: issued[0]!.body.number });
  });

  it('are voided with a reason; an issued one is cancelled by a numbered credit note referencing it', async () => {
    const org = await createTenant(t.api, 'Void');
    const contract = await createContract(
      { ...baseContract, startDate: '2025-01-01', lines: [{ type: 'flat', description: 'Flat', amount: '50' }] },
      org,
    );
    const generate = (periodStart: string) =>
      t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
        token: org.partnerToken,
        body: { periodStart },
      });
    const invoice = (await generate('2025-01-01')).body;
    const issued = await t.api.request('POST', `/api/v1/invoices/${invoice.id}/issue`, {
      token: org.partnerToken,
      body: {},
    });
    const missingReason = await t.api.request('POST', `/api/v1/invoices/${invoice.id}/void`, {
      token: org.partnerToken,
      body: {},
    });
    expect(missingReason.status).toBe(400);
    const voided = await t.api.request('POST', `/api/v1/invoices/${invoice.id}/void`, {
      token: org.partnerToken,
      body: { reason: 'Billed the wrong customer' },
    });
    expect(voided.body).toMatchObject({
      status: 'void',
      number: issued.body.number,
      voidReason: 'Billed the wrong customer',
    });
    const credit = await t.api.request('GET', `/api/v1/invoices/${voided.body.creditNoteId}`, {
      token: org.partnerToken,
    });
    expect(credit.body).toMatchObject({
      kind: 'credit',
      status: 'issued',
      creditsInvoiceId: invoice.id,
      subtotal: '-50.00',
      tax: '-9.50',
      total: '-59.50',
    });
    expect(credit.body.number).not.toBe(issued.body.number);
    expect(
      (
        await t.api.request('POST', `/api/v1/invoices/${invoice.id}/void`, {
          token: org.partnerToken,
          body: { reason: 'x' },
        })
      ).status,
    ).toBe(409);
    expect(await auditRows('invoice.void', invoice.id)).toHaveLength(1);
    expect(await auditRows('invoice.credit', credit.body.id)).toHaveLength(1);
    // The period is free again: a new draft replaces the void invoice.
    const replacement = await generate('2025-01-01');
    expect(replacement.body.id).not.toBe(invoice.id);
    expect(replacement.body.status).toBe('draft');
  });

  it("are read by the organization's users only once issued, and never another tenant's", async () => {
    const org = await createTenant(t.api, 'Readers');
    const contract = await createContract(
      { ...baseContract, startDate: '2025-01-01', lines: [{ type: 'flat', description: 'Flat', amount: '1' }] },
      org,
    );
    const draft = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: '2025-01-01' },
    });
    const viewer = await orgUser(org.partnerId, org.orgId, 'org_viewer');
    expect((await t.api.request('GET', `/api/v1/invoices/${draft.body.id}`, { token: viewer })).status).toBe(404);
    expect((await t.api.request('GET', '/api/v1/invoices', { token: viewer })).body.data).toEqual([]);
    await t.api.request('POST', `/api/v1/invoices/${draft.body.id}/issue`, { token: org.partnerToken, body: {} });
    expect((await t.api.request('GET', `/api/v1/invoices/${draft.body.id}`, { token: viewer })).status).toBe(200);
    const listed = await t.api.request('GET', '/api/v1/invoices?status=issued', { token: viewer });
    expect(listed.body.data.map((i: { id: string }) => i.id)).toEqual([draft.body.id]);
    expect(
      (await t.api.request('POST', `/api/v1/invoices/${draft.body.id}/void`, { token: viewer, body: { reason: 'x' } }))
        .status,
    ).toBe(403);
    expect(
      (await t.api.request('GET', `/api/v1/invoices/${draft.body.id}`, { token: other.partnerToken })).status,
    ).toBe(404);
    expect(
      (await t.api.request('GET', `/api/v1/invoices?orgId=${org.orgId}`, { token: other.partnerToken })).body.data,
    ).toEqual([]);
  });
});

describe('the current period', () => {
  it('bills devices enrolled and deleted through the API, with a statement naming their audit rows and the chain head', async () => {
    const org = await createTenant(t.api, 'Live');
    const today = new Date().toISOString().slice(0, 10);
    const contract = await createContract(
      {
        ...baseContract,
        timezone: 'UTC',
        startDate: `${today.slice(0, 7)}-01`,
        lines: [{ type: 'per-device', description: 'Devices', unitPrice: '31.00' }],
      },
      org,
    );
    const kept = await enrollDevice(t.api, org, 'kept');
    const gone = await enrollDevice(t.api, org, 'gone');
    expect((await t.api.request('DELETE', `/api/v1/devices/${gone.deviceId}`, { token: org.orgToken })).status).toBe(
      204,
    );
    const estimate = await t.api.request('GET', `/api/v1/contracts/${contract.id}/estimate`, {
      token: org.partnerToken,
    });
    const invoice = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: estimate.body.periodStart },
    });
    expect(invoice.body.lines).toEqual(estimate.body.lines);
    expect(invoice.body.total).toBe(estimate.body.total);
    const periodDays = invoice.body.lines[0].periodDays as number;
    const lastDay = Number(invoice.body.periodEnd.slice(8, 10));
    const dayOfMonth = Number(today.slice(8, 10));
    // kept counts from today to the period's end, gone only today.
    expect(invoice.body.lines[0].deviceDays).toBe(lastDay - dayOfMonth + 1 + 1);
    const statement = (
      await t.api.request('GET', `/api/v1/invoices/${invoice.body.id}/usage-statement`, { token: org.partnerToken })
    ).body;
    // The head at generation: the row just before the invoice's own invoice.generate row.
    const head = await t.db.admin.query<{ seq: number; checksum: string }>(
      `SELECT seq, checksum FROM audit_logs WHERE org_id = :orgId::uuid
          AND seq = (SELECT seq - 1 FROM audit_logs WHERE action = 'invoice.generate' AND resource_id = :id::uuid)`,
      { orgId: org.orgId, id: invoice.body.id },
    );
    expect(statement.chainHead).toEqual({ seq: head.rows[0]!.seq, checksum: head.rows[0]!.checksum });
    expect(invoice.body.chainHead).toEqual(statement.chainHead);
    const byHost = Object.fromEntries(statement.devices.map((d: { hostname: string }) => [d.hostname, d]));
    const [created] = await auditRows('device.create', kept.deviceId);
    const [deleted] = await auditRows('device.delete', gone.deviceId);
    expect(byHost.kept).toMatchObject({
      deviceId: kept.deviceId,
      days: lastDay - dayOfMonth + 1,
      createSeq: created!.seq,
    });
    expect(byHost.gone).toMatchObject({ days: 1, lastDay: today, deleteSeq: deleted!.seq });
    expect(periodDays).toBe(lastDay);
    const csv = await fetch(`${t.api.url}/api/v1/invoices/${invoice.body.id}/usage-statement?format=csv`, {
      headers: { authorization: `Bearer ${org.partnerToken}` },
    });
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const text = await csv.text();
    expect(text.split('\r\n')[0]).toBe(
      'deviceId,hostname,siteId,osType,role,enrolledAt,deletedAt,firstDay,lastDay,days,createSeq,deleteSeq',
    );
    expect(text).toContain(`#chainHeadSeq,${head.rows[0]!.seq}`);
  });

  it('renders invoices as CSV, PDF and the accounting exports', async () => {
    const org = await createTenant(t.api, 'Render');
    const profilePath = `/api/v1/partners/${org.partnerId}/billing-profile`;
    const profile = await t.api.request('PATCH', profilePath, {
      token: org.partnerToken,
      body: { name: 'Render MSP GmbH', address: 'Hauptstr. 1, Berlin', taxId: 'DE123456789' },
    });
    expect(profile.body).toMatchObject({ partnerId: org.partnerId, name: 'Render MSP GmbH', logo: null });
    expect(await auditRows('billing_profile.update', org.partnerId)).toHaveLength(1);
    const body = { taxId: 'x' };
    expect((await t.api.request('PATCH', profilePath, { token: org.orgToken, body })).status).toBe(404);
    expect((await t.api.request('PATCH', profilePath, { token: other.partnerToken, body })).status).toBe(404);
    const badLogo = await t.api.request('PATCH', profilePath, {
      token: org.partnerToken,
      body: { logo: 'https://example.test/logo.png' },
    });
    expect(badLogo.body.error.details[0].path).toBe('body.logo');
    const contract = await createContract(
      {
        ...baseContract,
        startDate: '2025-01-01',
        lines: [{ type: 'flat', description: 'Flat, monthly', amount: '12.34' }],
      },
      org,
    );
    const draft = await t.api.request('POST', `/api/v1/contracts/${contract.id}/invoices`, {
      token: org.partnerToken,
      body: { periodStart: '2025-01-01' },
    });
    const issued = await t.api.request('POST', `/api/v1/invoices/${draft.body.id}/issue`, {
      token: org.partnerToken,
      body: {},
    });
    const get = (path: string) =>
      fetch(`${t.api.url}${path}`, { headers: { authorization: `Bearer ${org.partnerToken}` } });
    const csv = await (await get(`/api/v1/invoices/${draft.body.id}?format=csv`)).text();
    expect(csv).toContain('"Flat, monthly"');
    expect(csv).toContain(issued.body.number);
    const pdf = await get(`/api/v1/invoices/${draft.body.id}?format=pdf`);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(
      Buffer.from(await pdf.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
    const day = issued.body.issueDate;
    const xero = await (await get(`/api/v1/invoices/export?format=xero&from=${day}&to=${day}`)).text();
    const [header, row] = xero.split('\r\n');
    expect(header).toBe(
      '*ContactName,*InvoiceNumber,Reference,*InvoiceDate,*DueDate,*Description,*Quantity,*UnitAmount,*AccountCode,*TaxType,TaxAmount,Currency',
    );
    expect(row).toContain(`Render Corp,${issued.body.number},`);
    expect(row).toContain(',1,12.34,200,Tax on Sales,2.34,EUR');
    const qbo = await (await get(`/api/v1/invoices/export?format=quickbooks&from=${day}&to=${day}`)).text();
    expect(qbo.split('\r\n')[1]).toContain(`${issued.body.number},Render Corp,${day},`);
  });
});

describe('the daily run', () => {
  it('generates due periods, issues them with autoIssue, and after a pause bills the periods that fell due, each for its billed days', async () => {
    const org = await createTenant(t.api, 'Due');
    const contract = await createContract(
      {
        ...baseContract,
        startDate: '2024-01-31',
        endDate: '2024-04-29',
        autoIssue: true,
        lines: [{ type: 'flat', description: 'Flat', amount: '31.00' }],
      },
      org,
    );
    const db = appDb();
    // Nothing due before the first period has ended (billing in arrears).
    expect(await runDueInvoices(db, { asOf: new Date('2024-02-28T12:00:00Z') })).toMatchObject({ contracts: 0 });
    await t.db.admin.query("UPDATE contracts SET status = 'paused' WHERE id = :id::uuid", { id: contract.id });
    await t.db.admin.query(
      "INSERT INTO contract_pauses (contract_id, paused_on, resumed_on) VALUES (:id::uuid, '2024-03-01', '2024-03-11')",
      { id: contract.id },
    );
    // Other contracts of this database fall due too: only this one's invoices are looked at.
    await runDueInvoices(db, { asOf: new Date('2024-03-20T12:00:00Z') });
    const invoicesOf = () =>
      t.db.admin.query<{ periodStart: string; total: string; status: string }>(
        `SELECT period_start::text AS "periodStart", total::text AS total, status FROM invoices
          WHERE contract_id = :id::uuid ORDER BY period_start`,
        { id: contract.id },
      );
    expect((await invoicesOf()).rows).toEqual([]);
    await t.db.admin.query("UPDATE contracts SET status = 'active' WHERE id = :id::uuid", { id: contract.id });
    const run = await runDueInvoices(db, { asOf: new Date('2024-04-30T12:00:00Z') });
    expect(run).toMatchObject({ failed: 0 });
    expect(run.ended).toBeGreaterThanOrEqual(1);
    const { rows } = await invoicesOf();
    // Jan 31–Feb 28 whole; Feb 29–Mar 30 less the 10 paused days (21 of 31); Mar 31–Apr 29 whole.
    expect(rows.map((r) => [r.periodStart, Number(r.total).toFixed(2), r.status])).toEqual([
      ['2024-01-31', '36.89', 'issued'],
      ['2024-02-29', '24.99', 'issued'],
      ['2024-03-31', '36.89', 'issued'],
    ]);
    const after = await t.api.request('GET', `/api/v1/contracts/${contract.id}`, { token: org.partnerToken });
    expect(after.body).toMatchObject({ status: 'ended', nextPeriod: null });
    // A second run the same day finds nothing due.
    expect(await runDueInvoices(db, { asOf: new Date('2024-04-30T13:00:00Z') })).toMatchObject({ contracts: 0 });
  });

  it('pauses, resumes and cancels through the API, each audited', async () => {
    const contract = await createContract({
      ...baseContract,
      lines: [{ type: 'flat', description: 'x', amount: '1' }],
    });
    const act = (action: string) =>
      t.api.request('POST', `/api/v1/contracts/${contract.id}/${action}`, { token: tenant.partnerToken, body: {} });
    expect((await act('resume')).status).toBe(409);
    expect((await act('pause')).body.status).toBe('paused');
    const resumed = await act('resume');
    expect(resumed.body.status).toBe('active');
    // Paused and resumed on one day: no day lost.
    expect(resumed.body.pauses).toEqual([]);
    const cancelled = await act('cancel');
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.endDate).not.toBeNull();
    for (const action of ['pause', 'resume', 'cancel'])
      expect(await auditRows(`contract.${action}`, contract.id)).toHaveLength(1);
  });

  it('bills nothing of a contract cancelled before its start', async () => {
    const contract = await createContract({
      ...baseContract,
      startDate: '2099-01-01',
      lines: [{ type: 'flat', description: 'x', amount: '1' }],
    });
    const cancelled = await t.api.request('POST', `/api/v1/contracts/${contract.id}/cancel`, {
      token: tenant.partnerToken,
      body: {},
    });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', nextPeriod: null, nextDueOn: null });
  });
});
