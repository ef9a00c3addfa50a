import type { Db } from '../db/db.ts';
import { type AuditRowInput, insertAuditRows, type AppendedRow as Sealed } from './store.ts';

type Waiting = { rows: AuditRowInput[]; resolve: (sealed: Sealed[]) => void; reject: (error: unknown) => void };

/** At most this many rows in one grouped statement; a longer queue goes in several, one after another. */
const maxGroupRows = 500;

/** Per executor and organization: the writes waiting while a statement of that organization is in flight. */
const queues = new WeakMap<Db, Map<string, Waiting[]>>();

/**
 * Appends rows of one organization as insertAuditRows does, grouping the concurrent writes of this process
 * (docs/ARCHITECTURE.md "Audit writes"): while a statement of the organization is in flight, later writes
 * wait and then go together in one statement, one chain lock and one commit. A write finding none in flight
 * goes at once, so grouping adds no latency; each caller resolves once its own rows are committed. When the
 * database refuses a grouped statement's data, each write is retried alone, so one refused row fails only its own
 * caller. Rows of several organizations go straight to insertAuditRows.
 */
export function appendAuditRows(db: Db, rows: AuditRowInput[]): Promise<Sealed[]> {
  const orgId = rows[0]?.orgId;
  if (orgId === undefined || rows.some((row) => row.orgId !== orgId)) return insertAuditRows(db, rows);
  const byOrg = queues.get(db) ?? new Map<string, Waiting[]>();
  queues.set(db, byOrg);
  const queue = byOrg.get(orgId);
  if (queue) return new Promise((resolve, reject) => queue.push({ rows, resolve, reject }));
  byOrg.set(orgId, []);
  return drain(db, byOrg, orgId, insertAuditRows(db, rows));
}

/** Waits for the statement in flight, then sends what queued meanwhile, until nothing waits. */
async function drain(db: Db, byOrg: Map<string, Waiting[]>, orgId: string, first: Promise<Sealed[]>) {
  try {
    return await first;
  } finally {
    void (async () => {
      for (let queue = byOrg.get(orgId)!; queue.length > 0; queue = byOrg.get(orgId)!) {
        const group: Waiting[] = [];
        let count = 0;
        while (queue.length > 0 && (group.length === 0 || count + queue[0]!.rows.length <= maxGroupRows)) {
          const next = queue.shift()!;
          group.push(next);
          count += next.rows.length;
        }
        await sendGroup(db, group);
      }
      byOrg.delete(orgId);
    })();
  }
}

async function sendGroup(db: Db, group: Waiting[]): Promise<void> {
  let sealed: Sealed[];
  try {
    sealed = await insertAuditRows(
      db,
      group.flatMap((waiting) => waiting.rows),
    );
  } catch (error) {
    // A row the database refuses (a data or constraint error) fails only its own write; any other failure (the
    // connection lost, a timeout) would fail each write again, one after the other, so it fails them all at once.
    const sqlState = String((error as { code?: unknown }).code ?? '');
    if (group.length === 1 || !(sqlState.startsWith('22') || sqlState.startsWith('23'))) {
      for (const waiting of group) waiting.reject(error);
      return;
    }
    for (const waiting of group) await insertAuditRows(db, waiting.rows).then(waiting.resolve, waiting.reject);
    return;
  }
  // One organization, sealed in the order sent: ascending pos hands each write its own rows back.
  sealed.sort((a, b) => a.pos - b.pos);
  let at = 0;
  for (const waiting of group) {
    waiting.resolve(sealed.slice(at, at + waiting.rows.length));
    at += waiting.rows.length;
  }
}
