import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Db, Tx } from '../db/db.ts';
import { logger } from '../logger.ts';
import { contractResource, nextDue } from './contracts.ts';
import { generateLocked, issueLocked } from './invoices.ts';
import { addDays, periodAt, periodContaining } from './periods.ts';
import * as store from './store.ts';

export interface DueRun {
  asOf: string;
  contracts: number;
  generated: number;
  issued: number;
  renewed: number;
  ended: number;
  failed: number;
}

/**
 * The daily run: for every active or cancelled contract with a period due by today in its billing time zone, the
 * period's invoice is generated (a draft; issued too with autoIssue), then the contract moves on to its next period,
 * catching up every period that fell due since its last run (after a pause, for example). A contract past its end
 * date renews for one more period with autoRenew, otherwise it has ended. Each contract is billed in its own
 * transaction, so one that fails leaves the others billed; with nothing due the run reads only the contracts' due
 * index.
 */
export async function runDueInvoices(db: Db, options: { asOf?: Date } = {}): Promise<DueRun> {
  const asOf = options.asOf ?? new Date();
  const audit: AuditContext = { db, caller: null, pending: [] };
  const ids = await store.selectDueContractIds(db, asOf);
  const run: DueRun = {
    asOf: asOf.toISOString(),
    contracts: ids.length,
    generated: 0,
    issued: 0,
    renewed: 0,
    ended: 0,
    failed: 0,
  };
  for (const id of ids) {
    try {
      const counts = await db.transaction((tx) => billContract(tx, id, asOf, audit));
      run.generated += counts.generated;
      run.issued += counts.issued;
      run.renewed += counts.renewed;
      run.ended += counts.ended;
    } catch (error) {
      run.failed += 1;
      logger.error('[billing] The due run could not bill a contract', { contractId: id, error });
    }
  }
  await Promise.allSettled(audit.pending);
  return run;
}

async function billContract(tx: Tx, id: string, asOf: Date, audit: AuditContext) {
  const counts = { generated: 0, issued: 0, renewed: 0, ended: 0 };
  let contract = (await store.lockContract(tx, id))!;
  const today = await store.selectToday(tx, contract.timezone, asOf);
  while (
    (contract.status === 'active' || contract.status === 'cancelled') &&
    contract.nextPeriodStart &&
    contract.nextDueOn &&
    contract.nextDueOn <= today
  ) {
    const period = periodContaining(contract.startDate, contract.intervalMonths, contract.nextPeriodStart);
    const invoiceId = await generateLocked(tx, id, period, audit);
    counts.generated += 1;
    if (contract.autoIssue) {
      await issueLocked(tx, invoiceId, audit);
      counts.issued += 1;
    }
    let next = nextDue(contract, period.index + 1);
    if (!next.nextPeriodStart && contract.autoRenew && contract.status === 'active' && contract.endDate) {
      const endDate = addDays(periodAt(contract.startDate, contract.intervalMonths, period.index + 1).end, -1);
      await auditRenewal(tx, audit, contract, endDate);
      contract = await store.updateContractRow(tx, id, { endDate });
      next = nextDue(contract, period.index + 1);
      counts.renewed += 1;
    }
    const ended = !next.nextPeriodStart && contract.status === 'active';
    contract = await store.updateContractRow(tx, id, { ...next, ...(ended ? { status: 'ended' as const } : {}) });
    if (ended) counts.ended += 1;
  }
  return counts;
}

async function auditRenewal(tx: Tx, audit: AuditContext, contract: store.ContractRow, endDate: string) {
  await auditChange(tx, audit, {
    orgId: contract.orgId,
    action: 'contract.update',
    ...contractResource(contract),
    details: { before: { endDate: contract.endDate }, after: { endDate }, renewed: true },
  });
}
