/**
 * The history lane (migration 0175, docs/audit.md "Importing history"): an import's rows are sealed into
 * audit_history_lane, a child of audit_entries without the search index, and moved into audit_entries afterwards by
 * this job, in batches, each one statement (audit_history_move). Nothing polls: the import that fills the lane arms
 * the job after its commit, and the job arms itself again while rows wait.
 */
import { type Db, one } from '../db/db.ts';
import { logger } from '../logger.ts';
import { enqueue } from '../queue/work-queue.ts';

export const historyMoveJobKind = 'audit.history.move';

/** Rows moved by one statement: about a second of trigram work, well inside the statement timeout. */
export const historyMoveBatch = 5_000;

/** How long one job moves before it hands the rest to a job of its own (the queue worker has a minute). */
const moveBudgetMs = 40_000;

/** How long a job that found another mover at work waits before it looks again. */
const busyDelaySeconds = 15;

/**
 * The lock one move holds for its transaction (audit_history_move takes it without waiting), and a retention cut takes
 * before it deletes: a cut never runs beside a move.
 */
export const historyMoveLockSql = 'SELECT pg_advisory_xact_lock(2, 0)';

/** Arms the move of the lane's rows (never throws: a job that cannot be queued is logged, and the next import arms it). */
export function armHistoryMove(delaySeconds = 0): Promise<void> {
  return enqueue({ kind: historyMoveJobKind }, delaySeconds);
}

/** One statement of the move: up to `batch` of the lane's oldest rows into audit_entries. */
export async function moveHistoryBatch(db: Db, batch = historyMoveBatch): Promise<{ moved: number; waiting: boolean }> {
  const row = await one<{ moved: number; waiting: boolean }>(
    db,
    'SELECT moved, waiting FROM audit_history_move(:batch::int)',
    { batch },
  );
  return row!;
}

/**
 * The job: moves batches until the lane is empty or its time is up, then arms the rest. Another mover at work (one
 * moves at a time) leaves this one nothing to do but look again later: rows an import added after that mover's last
 * batch are then still moved.
 */
export async function runHistoryMove(db: Db, options: { budgetMs?: number; batch?: number } = {}): Promise<number> {
  const started = performance.now();
  let total = 0;
  for (;;) {
    const { moved, waiting } = await moveHistoryBatch(db, options.batch);
    total += moved;
    if (!waiting) break;
    if (moved === 0) {
      await armHistoryMove(busyDelaySeconds);
      break;
    }
    if (performance.now() - started > (options.budgetMs ?? moveBudgetMs)) {
      await armHistoryMove();
      break;
    }
  }
  if (total > 0) logger.info('[audit] History rows moved into the searchable trail', { rows: total });
  return total;
}

/** Whether any row of the organization waits in the lane: one index probe, whatever the lane holds. */
export async function historyRowsWait(db: Db, orgId: string): Promise<boolean> {
  const row = await one<{ waiting: boolean }>(
    db,
    'SELECT EXISTS (SELECT FROM ONLY audit_history_lane WHERE org_id = :orgId::uuid) AS waiting',
    { orgId },
  );
  return row!.waiting;
}

/**
 * Whether a lane row waits that the move can take (one whose id no entry has taken): what the daily retention run
 * arms the move for, so a row the move passes over never arms it again.
 */
export async function movableHistoryRowsWait(db: Db): Promise<boolean> {
  const row = await one<{ waiting: boolean }>(
    db,
    `SELECT EXISTS (SELECT FROM ONLY audit_history_lane w
                     WHERE NOT EXISTS (SELECT FROM ONLY audit_entries e WHERE e.id = w.id)) AS waiting`,
  );
  return row!.waiting;
}

/** How many rows wait in the lane (of the organization): the benchmark's and the tests' check of what moved. */
export async function countWaitingHistoryRows(db: Db, orgId?: string): Promise<number> {
  const row = await one<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM ONLY audit_history_lane${orgId ? ' WHERE org_id = :orgId::uuid' : ''}`,
    orgId ? { orgId } : {},
  );
  return row!.n;
}
