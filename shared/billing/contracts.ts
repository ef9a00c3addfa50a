import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, InvalidState, NotFound, ValidationFailed } from '../errors.ts';
import { addDays, type Period, periodAt, periodContaining } from './periods.ts';
import type { ContractLineInput, CreateContract, UpdateContract } from './schemas.ts';
import * as store from './store.ts';

/**
 * Billing is the partner's business: contracts and drafts are for partner (and platform) users holding billing:read
 * or billing:manage; an organization's users read only their own organization's issued invoices.
 */
export function requireBilling(principal: Principal, need: 'read' | 'manage') {
  if (principal.scope === 'organization') throw Forbidden('Contracts and invoicing are managed by the partner');
  if (need === 'manage') requirePermission(principal, 'billing:manage');
  else if (!principal.permissions.has('billing:manage')) requirePermission(principal, 'billing:read');
}

/** The contract if the principal reaches its organization (404 otherwise, never saying whether it exists). */
export async function reachableContract(db: Db, principal: Principal, id: string, need: 'read' | 'manage') {
  const contract = await store.selectContract(db, id);
  if (!contract || !(await selectOrganization(db, principal, contract.orgId))) throw NotFound('Contract');
  requireBilling(principal, need);
  return contract;
}

export const contractResource = (contract: { id: string; currency: string; startDate: string }) => ({
  resourceType: 'contract',
  resourceId: contract.id,
  resourceName: `${contract.currency} contract from ${contract.startDate}`,
});

const auditedFields = [
  'status',
  'endDate',
  'paymentTermsDays',
  'autoRenew',
  'autoIssue',
  'taxRatePercent',
  'lines',
] as const;

/** The contract as its replies and audit rows show it. */
export async function contractView(db: Db, contract: store.ContractRow) {
  const { lines, pauses } = await store.selectTerms(db, contract.id);
  const { nextPeriodStart, nextDueOn, ...rest } = contract;
  const next = nextPeriodStart ? periodContaining(contract.startDate, contract.intervalMonths, nextPeriodStart) : null;
  return {
    ...rest,
    taxRatePercent: trim(contract.taxRatePercent),
    lines: lines.map((line) => ({
      ...line,
      amount: line.amount === null ? null : trim(line.amount),
      unitPrice: line.unitPrice === null ? null : trim(line.unitPrice),
    })),
    pauses,
    nextPeriod: next ? { start: next.start, end: addDays(periodEnd(contract, next), -1) } : null,
    nextDueOn,
  };
}

const trim = (text: string) => (text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text);

/** The day after a period's last billed day: its end, or earlier when the contract ends within it. */
export function periodEnd(contract: Pick<store.ContractRow, 'endDate'>, period: Period) {
  const afterEnd = contract.endDate ? addDays(contract.endDate, 1) : period.end;
  return afterEnd < period.end ? afterEnd : period.end;
}

/**
 * Where the daily run goes on after a period: the next period and the day it falls due (its start when billing in
 * advance, the day after its end in arrears), or nothing when the contract has ended by then and does not renew.
 */
export function nextDue(
  contract: Pick<store.ContractRow, 'startDate' | 'endDate' | 'intervalMonths' | 'billing'>,
  index: number,
) {
  const period = periodAt(contract.startDate, contract.intervalMonths, index);
  if (contract.endDate && period.start > contract.endDate) return { nextPeriodStart: null, nextDueOn: null };
  return {
    nextPeriodStart: period.start,
    nextDueOn: contract.billing === 'advance' ? period.start : periodEnd(contract, period),
  };
}

/** Lines may narrow to a site or static group of the contract's own organization only. */
async function checkLines(db: Db, orgId: string, lines: ContractLineInput[]) {
  for (const [index, line] of lines.entries()) {
    if (line.siteId) {
      const { rows } = await db.query(
        'SELECT 1 FROM sites WHERE id = :id::uuid AND org_id = :orgId::uuid AND deleted_at IS NULL',
        { id: line.siteId, orgId },
      );
      if (rows.length === 0) throw invalidLine(index, 'siteId', 'Not a site of this organization');
    }
    if (line.groupId) {
      const { rows } = await db.query<{ type: string }>(
        'SELECT type FROM device_groups WHERE id = :id::uuid AND org_id = :orgId::uuid',
        { id: line.groupId, orgId },
      );
      if (rows.length === 0) throw invalidLine(index, 'groupId', 'Not a device group of this organization');
      if (rows[0]!.type !== 'static')
        throw invalidLine(index, 'groupId', 'Only a static group narrows a line: a dynamic one has no history');
    }
  }
}

const invalidLine = (index: number, field: string, message: string) =>
  ValidationFailed(message, [{ path: `body.lines.${index}.${field}`, message, code: 'custom' }]);

export async function listContracts(db: Db, principal: Principal, orgId: string, page: Page) {
  await reachableOrganization(db, principal, orgId, 'orgs:read');
  requireBilling(principal, 'read');
  const result = await store.selectContracts(db, orgId, page);
  return { data: await Promise.all(result.data.map((c) => contractView(db, c))), pagination: result.pagination };
}

export async function getContract(db: Db, principal: Principal, id: string) {
  return contractView(db, await reachableContract(db, principal, id, 'read'));
}

/** Audited as contract.create with the contract and its lines. */
export async function createContract(
  db: Db,
  principal: Principal,
  orgId: string,
  input: CreateContract,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'orgs:read');
  requireBilling(principal, 'manage');
  await checkLines(db, orgId, input.lines);
  const { lines, ...fields } = input;
  return db.transaction(async (tx) => {
    const contract = await store.insertContract(tx, {
      ...fields,
      endDate: fields.endDate ?? null,
      orgId,
      partnerId: org.partnerId,
      ...nextDue({ ...fields, endDate: fields.endDate ?? null }, 0),
    });
    await store.insertLines(tx, contract.id, lines);
    const view = await contractView(tx, contract);
    await auditChange(tx, audit, {
      orgId,
      action: 'contract.create',
      ...contractResource(contract),
      details: { after: snapshot(view) },
    });
    return view;
  });
}

const snapshot = (view: Awaited<ReturnType<typeof contractView>>) =>
  Object.fromEntries(auditedFields.map((field) => [field, view[field]]));

/** Audited as contract.update with the changed fields before and after. Lines given replace every line. */
export async function updateContract(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateContract,
  audit: AuditContext,
) {
  const found = await reachableContract(db, principal, id, 'manage');
  if (change.lines) await checkLines(db, found.orgId, change.lines);
  return db.transaction(async (tx) => {
    const locked = (await store.lockContract(tx, id))!;
    if (change.status === 'active' && locked.status !== 'draft' && locked.status !== 'active')
      throw InvalidState(`A ${locked.status} contract is not activated; resume a paused one`);
    if (change.endDate && change.endDate < locked.startDate)
      throw ValidationFailed('endDate is before startDate', [
        { path: 'body.endDate', message: 'endDate is before startDate', code: 'custom' },
      ]);
    const before = await contractView(tx, locked);
    const { lines, ...fields } = change;
    let updated = await store.updateContractRow(tx, id, fields);
    if ('endDate' in change && updated.nextPeriodStart) {
      const next = periodContaining(updated.startDate, updated.intervalMonths, updated.nextPeriodStart);
      updated = await store.updateContractRow(tx, id, nextDue(updated, next.index));
    }
    if (lines) {
      await store.retireLines(tx, id);
      await store.insertLines(tx, id, lines);
    }
    const after = await contractView(tx, updated);
    await auditChange(tx, audit, {
      orgId: updated.orgId,
      action: 'contract.update',
      ...contractResource(updated),
      details: changedFields(snapshot(before), snapshot(after), auditedFields),
    });
    return after;
  });
}

/**
 * Pause, resume and cancel, each from today in the billing time zone. Paused days bill nothing; the daily run
 * leaves a paused contract alone, and after the resume bills every period that fell due meanwhile, each for its
 * billed days only (so no period is skipped). Cancelling ends the contract today: the days after it bill nothing, and
 * the run still bills what is due up to it.
 */
export async function changeContractState(
  db: Db,
  principal: Principal,
  id: string,
  action: 'pause' | 'resume' | 'cancel',
  audit: AuditContext,
) {
  await reachableContract(db, principal, id, 'manage');
  return db.transaction(async (tx) => {
    const contract = (await store.lockContract(tx, id))!;
    const today = await store.selectToday(tx, contract.timezone);
    const allowed = { pause: ['active'], resume: ['paused'], cancel: ['draft', 'active', 'paused'] }[action];
    if (!allowed.includes(contract.status))
      throw InvalidState(`A ${contract.status} contract cannot be ${action === 'pause' ? 'paused' : `${action}d`}`);
    let updated: store.ContractRow;
    if (action === 'pause') {
      await store.insertPause(tx, id, today);
      updated = await store.updateContractRow(tx, id, { status: 'paused' });
    } else if (action === 'resume') {
      await store.updatePauseResumed(tx, id, today);
      updated = await store.updateContractRow(tx, id, { status: 'active' });
    } else {
      if (contract.status === 'paused') await store.updatePauseResumed(tx, id, today);
      const endDate = contract.endDate && contract.endDate < today ? contract.endDate : today;
      updated = await store.updateContractRow(tx, id, {
        status: 'cancelled',
        endDate: endDate < contract.startDate ? contract.startDate : endDate,
      });
      // Cancelled before its start, a contract bills nothing; otherwise the run still bills up to the end.
      if (today < contract.startDate)
        updated = await store.updateContractRow(tx, id, { nextPeriodStart: null, nextDueOn: null });
      else if (updated.nextPeriodStart) {
        const next = periodContaining(updated.startDate, updated.intervalMonths, updated.nextPeriodStart);
        updated = await store.updateContractRow(tx, id, nextDue(updated, next.index));
      }
    }
    await auditChange(tx, audit, {
      orgId: updated.orgId,
      action: `contract.${action}`,
      ...contractResource(updated),
      details: {
        before: { status: contract.status, endDate: contract.endDate },
        after: { status: updated.status, endDate: updated.endDate },
        on: today,
      },
    });
    return contractView(tx, updated);
  });
}
