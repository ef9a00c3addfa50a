import { type AuditContext, auditChange, type RouteEvent } from '../audit/writer.ts';
import type { Db, Tx } from '../db/db.ts';
import { logger } from '../logger.ts';
import { contractResource, nextDue } from './contracts.ts';
import { generateLocked, issueLocked } from './invoices.ts';
import { addDays, periodAt, periodContaining } from './periods.ts';
import * as store from './store.ts';

/** Contracts billed at once. */
const concurrency = 8;

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
  const bill = async (id: string) => {
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
  };
  // A few contracts at once: each is its own organization's, so they wait on no common lock, and the database's
  // round trips (slow through the Data API) overlap.
  let next = 0;
  const worker = async () => {
    while (next < ids.length) await bill(ids[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
  await Promise.allSettled(audit.pending);
  return run;
}

async function billContract(tx: Tx, id: string, asOf: Date, audit: AuditContext) {
  const counts = { generated: 0, issued: 0, renewed: 0, ended: 0 };
  const events: RouteEvent[] = [];
  let contract = (await store.lockContract(tx, id))!;
  const today = await store.selectToday(tx, contract.timezone, asOf);
  const known = {
    terms: await store.selectTerms(tx, id),
    invoices: contract.nextPeriodStart
      ? await store.selectPeriodInvoicesFrom(tx, id, contract.nextPeriodStart)
      : new Map<string, store.InvoiceRow>(),
  };
  let next = { nextPeriodStart: contract.nextPeriodStart, nextDueOn: contract.nextDueOn };
  while (
    (contract.status === 'active' || contract.status === 'cancelled') &&
    next.nextPeriodStart &&
    next.nextDueOn &&
    next.nextDueOn <= today
  ) {
    const period = periodContaining(contract.startDate, contract.intervalMonths, next.nextPeriodStart);
    const invoiceId = await generateLocked(tx, contract, period, events, known);
    counts.generated += 1;
    if (contract.autoIssue) {
      await issueLocked(tx, invoiceId, events);
      counts.issued += 1;
    }
    next = nextDue(contract, period.index + 1);
    if (!next.nextPeriodStart && contract.autoRenew && contract.status === 'active' && contract.endDate) {
      const endDate = addDays(periodAt(contract.startDate, contract.intervalMonths, period.index + 1).end, -1);
      events.push(renewal(contract, endDate));
      contract = await store.updateContractRow(tx, id, { endDate });
      next = nextDue(contract, period.index + 1);
      counts.renewed += 1;
    }
  }
  const ended = !next.nextPeriodStart && contract.status === 'active';
  if (counts.generated > 0)
    await store.updateContractRow(tx, id, { ...next, ...(ended ? { status: 'ended' as const } : {}) });
  if (ended) counts.ended += 1;
  await auditChange(tx, audit, events);
  return counts;
}

const renewal = (contract: store.ContractRow, endDate: string): RouteEvent => ({
  orgId: contract.orgId,
  action: 'contract.update',
  ...contractResource(contract),
  details: { before: { endDate: contract.endDate }, after: { endDate }, renewed: true },
});
