import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type {
  ContractLineInput,
  ContractStatus,
  DeviceRole,
  InvoiceLine,
  InvoiceStatus,
  LineType,
  UsageStatement,
} from './schemas.ts';

// Dates travel as YYYY-MM-DD text and numerics as text: no driver turns either into a Date or a float.

export type ContractRow = {
  id: string;
  orgId: string;
  partnerId: string;
  currency: string;
  status: ContractStatus;
  startDate: string;
  endDate: string | null;
  intervalMonths: number;
  billing: 'advance' | 'arrears';
  timezone: string;
  paymentTermsDays: number;
  autoRenew: boolean;
  autoIssue: boolean;
  taxRatePercent: string;
  nextPeriodStart: string | null;
  nextDueOn: string | null;
  createdAt: Date;
  updatedAt: Date;
};

const contractColumns = `c.id, c.org_id AS "orgId", c.partner_id AS "partnerId", c.currency, c.status,
  c.start_date::text AS "startDate", c.end_date::text AS "endDate", c.interval_months AS "intervalMonths", c.billing,
  c.timezone, c.payment_terms_days AS "paymentTermsDays", c.auto_renew AS "autoRenew", c.auto_issue AS "autoIssue",
  c.tax_rate_percent::text AS "taxRatePercent", c.next_period_start::text AS "nextPeriodStart",
  c.next_due_on::text AS "nextDueOn", c.created_at AS "createdAt", c.updated_at AS "updatedAt"`;

export type ContractValues = Omit<ContractRow, 'id' | 'createdAt' | 'updatedAt'>;

export async function insertContract(tx: Db, values: ContractValues): Promise<ContractRow> {
  return (await one<ContractRow & Record<string, unknown>>(
    tx,
    `INSERT INTO contracts AS c (org_id, partner_id, currency, status, start_date, end_date, interval_months, billing,
       timezone, payment_terms_days, auto_renew, auto_issue, tax_rate_percent, next_period_start, next_due_on)
     VALUES (:orgId::uuid, :partnerId::uuid, :currency::text, :status::text, :startDate::date, :endDate::date,
       :intervalMonths::smallint, :billing::text, :timezone::text, :paymentTermsDays::int, :autoRenew::boolean,
       :autoIssue::boolean, :taxRatePercent::numeric, :nextPeriodStart::date, :nextDueOn::date)
     RETURNING ${contractColumns}`,
    { ...values },
  ))!;
}

export function selectContract(db: Db, id: string) {
  return one<ContractRow & Record<string, unknown>>(
    db,
    `SELECT ${contractColumns} FROM contracts c WHERE c.id = :id::uuid`,
    {
      id,
    },
  );
}

/** The contract, locked to the end of the transaction: its generates, issues and due runs take turns. */
export function lockContract(tx: Db, id: string) {
  return one<ContractRow & Record<string, unknown>>(
    tx,
    `SELECT ${contractColumns} FROM contracts c WHERE c.id = :id::uuid FOR UPDATE`,
    { id },
  );
}

export function selectContracts(db: Db, orgId: string, page: Page) {
  return selectPage<ContractRow>(
    db,
    contractColumns,
    'contracts c WHERE c.org_id = :orgId::uuid',
    'c.created_at, c.id',
    { orgId },
    page,
  );
}

export async function updateContractRow(
  tx: Db,
  id: string,
  change: Partial<
    Pick<
      ContractRow,
      | 'status'
      | 'endDate'
      | 'paymentTermsDays'
      | 'autoRenew'
      | 'autoIssue'
      | 'taxRatePercent'
      | 'nextPeriodStart'
      | 'nextDueOn'
    >
  >,
): Promise<ContractRow> {
  const has = (field: keyof typeof change) => field in change;
  return (await one<ContractRow & Record<string, unknown>>(
    tx,
    `UPDATE contracts c SET
       status = CASE WHEN :setStatus::boolean THEN :status::text ELSE c.status END,
       end_date = CASE WHEN :setEndDate::boolean THEN :endDate::date ELSE c.end_date END,
       payment_terms_days = COALESCE(:paymentTermsDays::int, c.payment_terms_days),
       auto_renew = COALESCE(:autoRenew::boolean, c.auto_renew),
       auto_issue = COALESCE(:autoIssue::boolean, c.auto_issue),
       tax_rate_percent = COALESCE(:taxRatePercent::numeric, c.tax_rate_percent),
       next_period_start = CASE WHEN :setNext::boolean THEN :nextPeriodStart::date ELSE c.next_period_start END,
       next_due_on = CASE WHEN :setNext::boolean THEN :nextDueOn::date ELSE c.next_due_on END,
       updated_at = now()
     WHERE c.id = :id::uuid
     RETURNING ${contractColumns}`,
    {
      id,
      setStatus: has('status'),
      status: change.status ?? null,
      setEndDate: has('endDate'),
      endDate: change.endDate ?? null,
      paymentTermsDays: change.paymentTermsDays,
      autoRenew: change.autoRenew,
      autoIssue: change.autoIssue,
      taxRatePercent: change.taxRatePercent,
      setNext: has('nextPeriodStart'),
      nextPeriodStart: change.nextPeriodStart ?? null,
      nextDueOn: change.nextDueOn ?? null,
    },
  ))!;
}

export type ContractLineRow = {
  id: string;
  type: LineType;
  description: string;
  amount: string | null;
  unitPrice: string | null;
  includedQuantity: number | null;
  groupId: string | null;
  siteId: string | null;
  osType: string | null;
  role: 'workstation' | 'server' | null;
  taxable: boolean;
};

const lineColumns = `l.id, l.type, l.description, l.amount::text AS amount, l.unit_price::text AS "unitPrice",
  l.included_quantity AS "includedQuantity", l.group_id AS "groupId", l.site_id AS "siteId", l.os_type AS "osType",
  l.role, l.taxable`;

export async function insertLines(tx: Db, contractId: string, lines: ContractLineInput[]) {
  await tx.query(
    `INSERT INTO contract_lines (contract_id, position, type, description, amount, unit_price, included_quantity,
       group_id, site_id, os_type, role, taxable)
     SELECT :contractId::uuid, l.position, l.type, l.description, l.amount, l."unitPrice", l."includedQuantity",
            l."groupId", l."siteId", l."osType", l.role, l.taxable
       FROM jsonb_to_recordset(:lines::jsonb) AS l(position int, type text, description text, amount numeric,
            "unitPrice" numeric, "includedQuantity" int, "groupId" uuid, "siteId" uuid, "osType" text, role text,
            taxable boolean)`,
    { contractId, lines: lines.map((line, position) => ({ ...line, position })) },
  );
}

/** Lines replaced by a change stay, retired, for the invoices that name them. */
export async function retireLines(tx: Db, contractId: string) {
  await tx.query(
    'UPDATE contract_lines SET retired_at = now() WHERE contract_id = :contractId::uuid AND retired_at IS NULL',
    { contractId },
  );
}

export type ContractTerms = Awaited<ReturnType<typeof selectTerms>>;

/** The contract's live lines and its pauses, in one statement. */
export async function selectTerms(db: Db, contractId: string) {
  const row = await one<{ lines: ContractLineRow[]; pauses: PauseRow[] }>(
    db,
    `SELECT COALESCE((SELECT json_agg(x ORDER BY x.position) FROM (
              SELECT l.position, ${lineColumns} FROM contract_lines l
               WHERE l.contract_id = :contractId::uuid AND l.retired_at IS NULL) x), '[]') AS lines,
            COALESCE((SELECT json_agg(json_build_object('pausedOn', p.paused_on::text, 'resumedOn', p.resumed_on::text)
                        ORDER BY p.paused_on)
                        FROM contract_pauses p WHERE p.contract_id = :contractId::uuid), '[]') AS pauses`,
    { contractId },
  );
  return {
    lines: row!.lines.map(({ position: _, ...line }: ContractLineRow & { position?: number }) => line),
    pauses: row!.pauses,
  };
}

export type PauseRow = {
  pausedOn: string;
  resumedOn: string | null;
};

/** A pause from this day; a pause and a resume on one day leave no paused day. */
export async function insertPause(tx: Db, contractId: string, day: string) {
  await tx.query(
    `INSERT INTO contract_pauses (contract_id, paused_on) VALUES (:contractId::uuid, :day::date)
     ON CONFLICT (contract_id, paused_on) DO UPDATE SET resumed_on = NULL`,
    { contractId, day },
  );
}

export async function updatePauseResumed(tx: Db, contractId: string, day: string) {
  await tx.query(
    `UPDATE contract_pauses SET resumed_on = GREATEST(paused_on, :day::date)
      WHERE contract_id = :contractId::uuid AND resumed_on IS NULL`,
    { contractId, day },
  );
  await tx.query('DELETE FROM contract_pauses WHERE contract_id = :contractId::uuid AND resumed_on = paused_on', {
    contractId,
  });
}

/** Today in a time zone, as the database's clock tells it. */
export async function selectToday(db: Db, timezone: string, asOf: Date | null = null) {
  const row = await one<{ today: string }>(
    db,
    `SELECT to_char(COALESCE(:asOf::timestamptz, now()) AT TIME ZONE :timezone::text, 'YYYY-MM-DD') AS today`,
    { timezone, asOf },
  );
  return row!.today;
}

export type UsageDeviceRow = {
  deviceId: string;
  hostname: string;
  siteId: string;
  osType: string | null;
  osVersion: string | null;
  role: DeviceRole | null;
  /** ISO 8601 in UTC. */
  enrolledAt: string;
  deletedAt: string | null;
  enrolledDay: string;
  deletedDay: string | null;
  createSeq: number | null;
  deleteSeq: number | null;
};

const isoUtc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** About the bytes of one device of a usage statement in a Data API result (its JSON and the record's framing). */
const usageDeviceBytes = 1_000;

/**
 * The organization's audit chain head, then its devices enrolled before the end of [from, to) and not deleted before
 * its start, by hostname, days taken in the billing time zone, deleted devices included (they count until the day
 * they were deleted), each with the seq of its device.create and device.delete audit rows. Each device is a row of its
 * own, read in pages under the Data API's 1 MiB result (a row stays far below its 64 KB row limit). The pages are
 * read as of the head, read with the first: a device whose device.create row lies above it was enrolled after it and
 * is left out, and a deletion whose device.delete row lies above it is not yet one, so every row the statement names
 * is at or below the head however the pages fall (one page is one snapshot, where nothing lies above it).
 */
export async function selectUsageRows(db: Db, orgId: string, timezone: string, from: string, to: string) {
  const limit = db.maxResultBytes === undefined ? null : Math.max(1, Math.floor(db.maxResultBytes / usageDeviceBytes));
  let head: { seq: number; checksum: string } | null | undefined;
  const devices: UsageDeviceRow[] = [];
  for (;;) {
    const after = devices[devices.length - 1];
    // The head is read with the first page; the later pages are cut at the head the first one read.
    const { rows } = await db.query<{
      headSeq: number | null;
      headChecksum: string | null;
      device: UsageDeviceRow | null;
    }>(
      `SELECT h.seq::float8 AS "headSeq", h.checksum AS "headChecksum", x.device
         FROM (SELECT max(seq) AS seq, max(checksum) AS checksum FROM audit_chain_heads WHERE org_id = :orgId::uuid) h
         LEFT JOIN LATERAL (
           SELECT to_json(y) AS device, y.hostname, y."deviceId" FROM (
             SELECT d.id AS "deviceId", d.hostname, d.site_id AS "siteId", d.os_type AS "osType",
                    d.os_version AS "osVersion", d.role, ${isoUtc('d.created_at')} AS "enrolledAt",
                    CASE WHEN g.gone THEN ${isoUtc('d.deleted_at')} END AS "deletedAt",
                    to_char(d.created_at AT TIME ZONE :timezone::text, 'YYYY-MM-DD') AS "enrolledDay",
                    CASE WHEN g.gone THEN to_char(d.deleted_at AT TIME ZONE :timezone::text, 'YYYY-MM-DD') END
                      AS "deletedDay",
                    t."createSeq", CASE WHEN g.gone THEN t."deleteSeq" END AS "deleteSeq"
               FROM devices d
               LEFT JOIN (
                 SELECT a.resource_id, min(a.seq) FILTER (WHERE a.action = 'device.create') AS "createSeq",
                        min(a.seq) FILTER (WHERE a.action = 'device.delete') AS "deleteSeq"
                   FROM audit_logs a
                  WHERE a.org_id = :orgId::uuid AND a.action IN ('device.create', 'device.delete')
                  GROUP BY a.resource_id
               ) t ON t.resource_id = d.id
               CROSS JOIN LATERAL (SELECT coalesce(:headSeq::bigint, h.seq) AS seq) cut
               CROSS JOIN LATERAL (
                 SELECT d.deleted_at IS NOT NULL
                        AND (t."deleteSeq" IS NULL OR cut.seq IS NULL OR t."deleteSeq" <= cut.seq) AS gone
               ) g
              WHERE d.org_id = :orgId::uuid
                AND d.created_at < (:to::date::timestamp AT TIME ZONE :timezone::text)
                AND (d.deleted_at IS NULL OR d.deleted_at >= (:from::date::timestamp AT TIME ZONE :timezone::text))
                AND (t."createSeq" IS NULL OR cut.seq IS NULL OR t."createSeq" <= cut.seq)
                AND (:afterHostname::text IS NULL OR (d.hostname, d.id) > (:afterHostname::text, :afterId::uuid))
              ORDER BY d.hostname, d.id
              LIMIT :limit::int
           ) y
         ) x ON true
        ORDER BY x.hostname, x."deviceId"`,
      {
        orgId,
        timezone,
        from,
        to,
        headSeq: head?.seq ?? null,
        afterHostname: after?.hostname ?? null,
        afterId: after?.deviceId ?? null,
        limit,
      },
    );
    if (head === undefined) {
      const first = rows[0]!;
      head = first.headSeq === null ? null : { seq: first.headSeq, checksum: first.headChecksum! };
    }
    const page = rows.flatMap((row) => (row.device ? [row.device] : []));
    devices.push(...page);
    if (limit === null || page.length < limit) break;
  }
  return { head: head ?? null, devices };
}

/** The devices of a static group, or those a dynamic group's compiled filter matches, deleted or not. */
export async function selectGroupDeviceIds(db: Db, orgId: string, groupId: string) {
  const { rows } = await db.query<{ id: string }>(
    `SELECT m.device_id AS id FROM device_group_members m WHERE m.group_id = :groupId::uuid AND m.org_id = :orgId::uuid`,
    { orgId, groupId },
  );
  return rows.map((row) => row.id);
}

// Invoices.

export type InvoiceRow = {
  id: string;
  contractId: string;
  orgId: string;
  partnerId: string;
  kind: 'invoice' | 'credit';
  status: InvoiceStatus;
  number: string | null;
  periodStart: string;
  periodEndExclusive: string;
  currency: string;
  subtotal: string;
  tax: string;
  total: string;
  lines: InvoiceLine[];
  chainHeadSeq: number | null;
  chainHeadChecksum: string | null;
  issueDate: string | null;
  dueDate: string | null;
  issuedAt: Date | null;
  creditsInvoiceId: string | null;
  creditNoteId: string | null;
  voidReason: string | null;
  voidedAt: Date | null;
  generatedAt: Date;
  timezone: string;
};

const invoiceColumns = `i.id, i.contract_id AS "contractId", i.org_id AS "orgId", i.partner_id AS "partnerId", i.kind,
  i.status, i.number, i.period_start::text AS "periodStart", i.period_end::text AS "periodEndExclusive", i.currency,
  i.subtotal::text AS subtotal, i.tax::text AS tax, i.total::text AS total, i.lines,
  i.chain_head_seq AS "chainHeadSeq", i.chain_head_checksum AS "chainHeadChecksum", i.issue_date::text AS "issueDate",
  i.due_date::text AS "dueDate", i.issued_at AS "issuedAt", i.credits_invoice_id AS "creditsInvoiceId",
  (SELECT cn.id FROM invoices cn WHERE cn.credits_invoice_id = i.id AND cn.kind = 'credit') AS "creditNoteId",
  i.void_reason AS "voidReason", i.voided_at AS "voidedAt", i.generated_at AS "generatedAt",
  (SELECT c.timezone FROM contracts c WHERE c.id = i.contract_id) AS timezone`;

export function selectInvoice(db: Db, id: string) {
  return one<InvoiceRow & Record<string, unknown>>(
    db,
    `SELECT ${invoiceColumns} FROM invoices i WHERE i.id = :id::uuid`,
    {
      id,
    },
  );
}

export function lockInvoice(tx: Db, id: string) {
  return one<InvoiceRow & Record<string, unknown>>(
    tx,
    `SELECT ${invoiceColumns} FROM invoices i WHERE i.id = :id::uuid FOR UPDATE OF i`,
    { id },
  );
}

/**
 * An invoice's stored usage statement. Through the Data API (64 KB a row, 1 MiB a result) its devices are read as
 * rows of their own, in pages, after the rest of the statement.
 */
export async function selectUsage(db: Db, id: string): Promise<UsageStatement | undefined> {
  if (db.maxResultBytes === undefined)
    return (await one<{ usage: UsageStatement }>(db, 'SELECT usage FROM invoices WHERE id = :id::uuid', { id }))?.usage;
  const found = await one<{ usage: UsageStatement }>(
    db,
    `SELECT usage - 'devices' AS usage FROM invoices WHERE id = :id::uuid`,
    { id },
  );
  if (!found) return undefined;
  const limit = Math.max(1, Math.floor(db.maxResultBytes / usageDeviceBytes));
  const devices: UsageStatement['devices'] = [];
  for (;;) {
    const { rows } = await db.query<{ device: UsageStatement['devices'][number] }>(
      `SELECT e.device FROM invoices i, jsonb_array_elements(i.usage -> 'devices') WITH ORDINALITY AS e(device, n)
        WHERE i.id = :id::uuid AND e.n > :after::bigint ORDER BY e.n LIMIT :limit::int`,
      { id, after: devices.length, limit },
    );
    devices.push(...rows.map((row) => row.device));
    if (rows.length < limit) break;
  }
  return { ...found.usage, devices };
}

/** The live (not void) invoice of a contract's period. */
export function selectPeriodInvoice(tx: Db, contractId: string, periodStart: string) {
  return one<InvoiceRow & Record<string, unknown>>(
    tx,
    `SELECT ${invoiceColumns} FROM invoices i
      WHERE i.contract_id = :contractId::uuid AND i.period_start = :periodStart::date AND i.kind = 'invoice'
        AND i.status <> 'void'`,
    { contractId, periodStart },
  );
}

/** The live invoices of a contract's periods from a day on, by period start. */
export async function selectPeriodInvoicesFrom(tx: Db, contractId: string, from: string) {
  const { rows } = await tx.query<InvoiceRow>(
    `SELECT ${invoiceColumns} FROM invoices i
      WHERE i.contract_id = :contractId::uuid AND i.period_start >= :from::date AND i.kind = 'invoice'
        AND i.status <> 'void'`,
    { contractId, from },
  );
  return new Map(rows.map((row) => [row.periodStart, row]));
}

/** Manual (one-off) lines already on a live invoice of another period of the contract. */
export async function selectBilledManualLines(db: Db, contractId: string, exceptPeriodStart: string) {
  const { rows } = await db.query<{ lineId: string }>(
    `SELECT DISTINCT l ->> 'contractLineId' AS "lineId"
       FROM invoices i, jsonb_array_elements(i.lines) AS x(line), LATERAL (SELECT x.line -> 'source') AS s(l)
      WHERE i.contract_id = :contractId::uuid AND i.kind = 'invoice' AND i.status <> 'void'
        AND i.period_start <> :exceptPeriodStart::date AND l ->> 'lineType' = 'manual'`,
    { contractId, exceptPeriodStart },
  );
  return new Set(rows.map((row) => row.lineId));
}

export type InvoiceFigures = {
  periodStart: string;
  periodEnd: string;
  currency: string;
  subtotal: string;
  tax: string;
  total: string;
  lines: InvoiceLine[];
  usage: UsageStatement;
};

export async function insertInvoice(
  tx: Db,
  id: string,
  contract: Pick<ContractRow, 'id' | 'orgId' | 'partnerId'>,
  figures: InvoiceFigures,
) {
  await tx.query(
    `INSERT INTO invoices (id, contract_id, org_id, partner_id, kind, status, period_start, period_end, currency, subtotal,
       tax, total, lines, usage, chain_head_seq, chain_head_checksum)
     VALUES (:id::uuid, :contractId::uuid, :orgId::uuid, :partnerId::uuid, 'invoice', 'draft', :periodStart::date, :periodEnd::date,
       :currency::text, :subtotal::numeric, :tax::numeric, :total::numeric, :lines::jsonb, :usage::jsonb,
       :chainSeq::bigint, :chainChecksum::text)`,
    {
      id,
      contractId: contract.id,
      orgId: contract.orgId,
      partnerId: contract.partnerId,
      ...figureParams(figures),
    },
  );
}

const figureParams = (figures: InvoiceFigures) => ({
  periodStart: figures.periodStart,
  periodEnd: figures.periodEnd,
  currency: figures.currency,
  subtotal: figures.subtotal,
  tax: figures.tax,
  total: figures.total,
  lines: figures.lines,
  usage: figures.usage,
  chainSeq: figures.usage.chainHead?.seq ?? null,
  chainChecksum: figures.usage.chainHead?.checksum ?? null,
});

/** A draft recomputed: its figures and statement replaced. Answers whether its lines changed. */
export async function updateDraftFigures(tx: Db, id: string, figures: InvoiceFigures) {
  const row = await one<{ changed: boolean }>(
    tx,
    `WITH old AS (SELECT id, lines FROM invoices WHERE id = :id::uuid AND status = 'draft' FOR UPDATE)
     UPDATE invoices i SET subtotal = :subtotal::numeric, tax = :tax::numeric, total = :total::numeric,
       lines = :lines::jsonb, usage = :usage::jsonb, chain_head_seq = :chainSeq::bigint,
       chain_head_checksum = :chainChecksum::text, generated_at = now()
      FROM old WHERE i.id = old.id
     RETURNING old.lines <> i.lines AS changed`,
    { id, ...figureParams(figures) },
  );
  return row?.changed ?? false;
}

/**
 * The next number of the partner's year. The counter row stays locked until the issuing transaction ends, so
 * numbers are taken in turn and a rolled-back issue gives its number back: no gaps.
 */
export async function nextInvoiceNumber(tx: Db, partnerId: string, year: number) {
  const row = await one<{ lastNumber: number }>(
    tx,
    `INSERT INTO invoice_counters AS n (partner_id, year, last_number) VALUES (:partnerId::uuid, :year::int, 1)
     ON CONFLICT (partner_id, year) DO UPDATE SET last_number = n.last_number + 1
     RETURNING n.last_number AS "lastNumber"`,
    { partnerId, year },
  );
  return row!.lastNumber;
}

export async function updateInvoiceIssued(
  tx: Db,
  id: string,
  issue: { number: string; issueDate: string; dueDate: string },
) {
  await tx.query(
    `UPDATE invoices SET status = 'issued', number = :number::text, issue_date = :issueDate::date,
       due_date = :dueDate::date, issued_at = now()
     WHERE id = :id::uuid AND status = 'draft'`,
    { id, ...issue },
  );
}

export async function updateInvoiceVoid(tx: Db, id: string, reason: string) {
  await tx.query(
    `UPDATE invoices SET status = 'void', void_reason = :reason::text, voided_at = now() WHERE id = :id::uuid`,
    { id, reason },
  );
}

/** A credit note for an issued invoice: its figures negated, issued and numbered at once. */
export async function insertCreditNote(
  tx: Db,
  invoice: InvoiceRow,
  credit: { subtotal: string; tax: string; total: string; lines: InvoiceLine[]; number: string; issueDate: string },
): Promise<string> {
  const row = await one<{ id: string }>(
    tx,
    `INSERT INTO invoices (contract_id, org_id, partner_id, kind, status, period_start, period_end, currency, subtotal,
       tax, total, lines, usage, chain_head_seq, chain_head_checksum, number, issue_date, due_date, issued_at,
       credits_invoice_id)
     SELECT contract_id, org_id, partner_id, 'credit', 'issued', period_start, period_end, currency, :subtotal::numeric,
            :tax::numeric, :total::numeric, :lines::jsonb, usage, chain_head_seq, chain_head_checksum, :number::text,
            :issueDate::date, :issueDate::date, now(), id
       FROM invoices WHERE id = :id::uuid
     RETURNING id`,
    { id: invoice.id, ...credit },
  );
  return row!.id;
}

/**
 * Invoices the principal reaches, newest period first. An organization's users see only issued ones (invoices and
 * credit notes) of their own organization.
 */
export function selectInvoices(
  db: Db,
  principal: Principal,
  filter: { orgId?: string; contractId?: string; status?: InvoiceStatus; issuedOnly: boolean },
  page: Page,
) {
  return selectPage<InvoiceRow>(
    db,
    invoiceColumns,
    `invoices i JOIN organizations o ON o.id = i.org_id
      WHERE o.deleted_at IS NULL AND ${orgTenantSql('o')}
        AND (:orgId::uuid IS NULL OR i.org_id = :orgId::uuid)
        AND (:contractId::uuid IS NULL OR i.contract_id = :contractId::uuid)
        AND (:status::text IS NULL OR i.status = :status::text)
        AND (NOT :issuedOnly::boolean OR i.status = 'issued')`,
    'i.period_start DESC, i.generated_at DESC, i.id',
    {
      ...tenantParams(principal),
      orgId: filter.orgId ?? null,
      contractId: filter.contractId ?? null,
      status: filter.status ?? null,
      issuedOnly: filter.issuedOnly,
    },
    page,
  );
}

/** Issued invoices and credit notes (void ones too: they were issued) of the partners the principal reaches, by issue date. */
export async function selectIssuedBetween(db: Db, principal: Principal, from: string, to: string) {
  const { rows } = await db.query<InvoiceRow & { orgName: string }>(
    `SELECT ${invoiceColumns}, o.name AS "orgName"
       FROM invoices i JOIN organizations o ON o.id = i.org_id
      WHERE ${orgTenantSql('o')} AND i.number IS NOT NULL
        AND i.issue_date BETWEEN :from::date AND :to::date
      ORDER BY i.partner_id, i.number`,
    { ...tenantParams(principal), from, to },
  );
  return rows;
}

// The daily run.

/**
 * Contracts with a period due by this instant in their own time zone. The bound a day later first reads only the
 * due index of contracts (no zone is more than a day ahead of UTC), so a run with nothing due touches nothing else.
 */
export async function selectDueContractIds(db: Db, asOf: Date) {
  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id FROM contracts c
      WHERE c.status IN ('active', 'cancelled') AND c.next_due_on <= (:asOf::timestamptz AT TIME ZONE 'UTC')::date + 1
        AND c.next_due_on <= (:asOf::timestamptz AT TIME ZONE c.timezone)::date
      ORDER BY c.next_due_on, c.id`,
    { asOf },
  );
  return rows.map((row) => row.id);
}

// Billing profiles.

export type BillingProfileRow = {
  partnerId: string;
  name: string | null;
  address: string | null;
  logo: string | null;
  taxId: string | null;
  updatedAt: Date;
};

const profileColumns = `p.partner_id AS "partnerId", p.name, p.address, p.logo, p.tax_id AS "taxId", p.updated_at AS "updatedAt"`;

export function selectBillingProfile(db: Db, partnerId: string) {
  return one<BillingProfileRow & Record<string, unknown>>(
    db,
    `SELECT ${profileColumns} FROM billing_profiles p WHERE p.partner_id = :partnerId::uuid`,
    { partnerId },
  );
}

export async function upsertBillingProfile(
  tx: Db,
  partnerId: string,
  change: { name?: string | null; address?: string | null; logo?: string | null; taxId?: string | null },
) {
  const set = (field: keyof typeof change) => field in change;
  return (await one<BillingProfileRow & Record<string, unknown>>(
    tx,
    `INSERT INTO billing_profiles AS p (partner_id, name, address, logo, tax_id)
     VALUES (:partnerId::uuid, :name::text, :address::text, :logo::text, :taxId::text)
     ON CONFLICT (partner_id) DO UPDATE SET
       name = CASE WHEN :setName::boolean THEN EXCLUDED.name ELSE p.name END,
       address = CASE WHEN :setAddress::boolean THEN EXCLUDED.address ELSE p.address END,
       logo = CASE WHEN :setLogo::boolean THEN EXCLUDED.logo ELSE p.logo END,
       tax_id = CASE WHEN :setTaxId::boolean THEN EXCLUDED.tax_id ELSE p.tax_id END,
       updated_at = now()
     RETURNING ${profileColumns}`,
    {
      partnerId,
      name: change.name ?? null,
      address: change.address ?? null,
      logo: change.logo ?? null,
      taxId: change.taxId ?? null,
      setName: set('name'),
      setAddress: set('address'),
      setLogo: set('logo'),
      setTaxId: set('taxId'),
    },
  ))!;
}

export function selectPartnerName(db: Db, partnerId: string) {
  return one<{ name: string }>(db, 'SELECT name FROM partners WHERE id = :partnerId::uuid', { partnerId });
}
