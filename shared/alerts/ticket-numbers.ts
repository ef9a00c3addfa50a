import { randomUUID } from 'node:crypto';
import { type AuditContext, auditChangeWith, flushAudit } from '../audit/writer.ts';
import type { Db, Tx } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import { enqueue, type Job } from '../queue/work-queue.ts';
import * as store from './store.ts';

/**
 * A partner's tickets are numbered from 1 without gaps, after the transactions that request them (docs/alerts.md
 * "Ticket numbers"): a raising transaction writes its ticket request and commits without the partner's counter, then
 * numberWaitingTickets numbers every request of the partner waiting, in one transaction holding the counter for one
 * statement and its commit, shared by the raises of the partner this process has in flight.
 */

export const numberTicketsJobKind = 'tickets.number';
export interface NumberTicketsJob {
  partnerId: string;
  /**
   * The process that armed it as a raise started: one still running that owes no number has nothing left for the
   * job. Absent when a numbering failed or a raise's commit was lost on its way: that job always numbers.
   */
  armedBy?: string;
}

const processId = randomUUID();

/** When the job armed for a raise numbers what was left waiting (a process that stopped after a commit). */
const recoveryDelaySeconds = 60;
/** A raise is covered by a job armed already when that job is due at least this long after the raise starts. */
const coverSeconds = 30;

/** Per partner: this process's committed ticket requests whose numbering has not ended yet. */
const inFlight = new Map<string, number>();
/** Per partner: when the last job this process armed is due (ms since the epoch). */
const armedUntil = new Map<string, number>();

/**
 * In the raising transaction, once it requested a ticket, before its commit: makes sure a job is armed to number the
 * request should the process stop between the commit and the numbering (one job a partner covers the raises of the
 * next 30 s, armed by the first of them; nothing polls, and the job finds nothing to do in a process that numbered
 * everything it requested), and numbers it once the transaction has committed (kept in the audit context's pending
 * writes, which the raise awaits before it returns).
 */
export async function ticketRequested(tx: Tx, audit: AuditContext, partnerId: string): Promise<void> {
  const now = Date.now();
  if ((armedUntil.get(partnerId) ?? 0) < now + coverSeconds * 1000) {
    armedUntil.set(partnerId, now + recoveryDelaySeconds * 1000);
    await armRecovery({ partnerId, armedBy: processId });
  }
  // A commit lost on its way may have landed: a job that always numbers is armed for its request.
  tx.ifCommitUnknown(() => audit.pending.push(armRecovery({ partnerId })));
  tx.afterCommit(() => {
    inFlight.set(partnerId, (inFlight.get(partnerId) ?? 0) + 1);
    audit.pending.push(
      numberWaitingTickets(audit.db, partnerId).finally(() => {
        const left = (inFlight.get(partnerId) ?? 1) - 1;
        if (left > 0) inFlight.set(partnerId, left);
        else inFlight.delete(partnerId);
      }),
    );
  });
}

/**
 * The `tickets.number` job: numbers the partner's waiting requests, unless a raise of this process armed it and the
 * process owes none (a job armed by a failure always numbers).
 */
export async function runNumberTicketsJob(db: Db, job: Job & NumberTicketsJob): Promise<void> {
  if (job.armedBy === processId && !inFlight.has(job.partnerId)) return;
  await numberNow(unkeyedDb(db), job.partnerId).sealed;
}

/** Arms the job that numbers what of the partner is left waiting (always, unless `armedBy` is this process). */
const armRecovery = (job: NumberTicketsJob) => enqueue({ kind: numberTicketsJobKind, ...job }, recoveryDelaySeconds);

/** Per executor and partner: the numbering in flight (until its commit), and the one callers arriving meanwhile share. */
type Flight = { running?: Promise<void>; next?: Promise<void> };
const flights = new WeakMap<Db, Map<string, Flight>>();

/**
 * Numbers every ticket request of the partner waiting (store.numberWaitingTicketRows), with the `ticket.create` of each
 * ticket audited in its transaction. While a numbering of the partner is in flight in this process, callers wait for its
 * commit and then share the next one, which takes what committed meanwhile: one lock of the counter and one commit for
 * many. Resolves once the caller's committed request is numbered and its audit rows sealed; a failure arms the job that
 * numbers what was left.
 */
function numberWaitingTickets(db: Db, partnerId: string): Promise<void> {
  const byPartner = flights.get(db) ?? new Map<string, Flight>();
  flights.set(db, byPartner);
  const flight = byPartner.get(partnerId) ?? {};
  byPartner.set(partnerId, flight);
  if (flight.next) return flight.next;
  const next = (flight.running ?? Promise.resolve()).then(() => {
    // From here on, a new caller waits for this one's commit and shares the one after it.
    flight.next = undefined;
    const { committed, sealed } = numberNow(db, partnerId);
    const running = committed
      .catch(() => undefined)
      .finally(() => {
        if (flight.running === running && !flight.next) byPartner.delete(partnerId);
      });
    flight.running = running;
    return sealed;
  });
  flight.next = next;
  return next;
}

/** One numbering: its commit, and its commit with its audit rows sealed. */
function numberNow(db: Db, partnerId: string): { committed: Promise<void>; sealed: Promise<void> } {
  // Numbered by the system, sealed after the commit, outside any keyed request.
  const audit: AuditContext = { db, caller: null, pending: [] };
  const committed = db
    .transaction((tx) =>
      auditChangeWith(tx, audit, [], async () => {
        const row = await store.numberWaitingTicketRows(tx, partnerId);
        return { entries: row.entries, ids: row.ids, failure: row.failure, follows: row.follows, answer: row.made };
      }),
    )
    .then(
      () => undefined,
      async (error: unknown) => {
        logger.error('[alerts] Could not number the waiting tickets', {
          partnerId,
          error: error instanceof Error ? error.message : String(error),
        });
        await armRecovery({ partnerId });
        throw error;
      },
    );
  return { committed, sealed: committed.finally(() => flushAudit(audit)) };
}
