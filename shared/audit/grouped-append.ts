import type { Db } from '../db/db.ts';
import { type AuditRowInput, insertAuditRows, type AppendedRow as Sealed, sealAuditIntents } from './store.ts';

type Waiting<T> = { items: T[]; resolve: (sealed: Sealed[]) => void; reject: (error: unknown) => void };

/** One statement that seals items of one organization into the chain, and answers the sealed rows in pos order. */
type Seal<T> = (db: Db, items: T[]) => Promise<Sealed[]>;

/** At most this many rows in one grouped statement; a longer queue goes in several, one after another. */
const maxGroupRows = 500;

/**
 * Seals items of one organization with `seal`, grouping the concurrent writes of this process (docs/ARCHITECTURE.md
 * "Audit writes"): while a statement of the organization is in flight, later writes wait and then go together in one
 * statement, one chain lock and one commit. A write finding none in flight goes at once, so grouping adds no latency;
 * each caller resolves once its own rows are committed. When the database refuses a grouped statement's data, each
 * write is retried alone, so one refused row fails only its own caller.
 */
function groupedSealer<T>(seal: Seal<T>, handBack: 'rows' | 'nothing') {
  /** Per executor and organization: the writes waiting while a statement of that organization is in flight. */
  const queues = new WeakMap<Db, Map<string, Waiting<T>[]>>();

  async function sendGroup(db: Db, group: Waiting<T>[]): Promise<void> {
    let sealed: Sealed[];
    try {
      sealed = await seal(
        db,
        group.flatMap((waiting) => waiting.items),
      );
    } catch (error) {
      // A row the database refuses (a data or constraint error) fails only its own write; any other failure (the
      // connection lost, a timeout) would fail each write again, one after the other, so it fails them all at once.
      const sqlState = String((error as { code?: unknown }).code ?? '');
      if (group.length === 1 || !(sqlState.startsWith('22') || sqlState.startsWith('23'))) {
        for (const waiting of group) waiting.reject(error);
        return;
      }
      for (const waiting of group) await seal(db, waiting.items).then(waiting.resolve, waiting.reject);
      return;
    }
    if (handBack === 'nothing') {
      for (const waiting of group) waiting.resolve([]);
      return;
    }
    // One organization, sealed in the order sent: ascending pos hands each write its own rows back.
    sealed.sort((a, b) => a.pos - b.pos);
    let at = 0;
    for (const waiting of group) {
      waiting.resolve(sealed.slice(at, at + waiting.items.length));
      at += waiting.items.length;
    }
  }

  /** Waits for the statement in flight, then sends what queued meanwhile, until nothing waits. */
  async function drain(db: Db, byOrg: Map<string, Waiting<T>[]>, orgId: string, first: Promise<Sealed[]>) {
    try {
      return await first;
    } finally {
      void (async () => {
        for (let queue = byOrg.get(orgId)!; queue.length > 0; queue = byOrg.get(orgId)!) {
          const group: Waiting<T>[] = [];
          let count = 0;
          while (queue.length > 0 && (group.length === 0 || count + queue[0]!.items.length <= maxGroupRows)) {
            const next = queue.shift()!;
            group.push(next);
            count += next.items.length;
          }
          await sendGroup(db, group);
        }
        byOrg.delete(orgId);
      })();
    }
  }

  return (db: Db, orgId: string, items: T[]): Promise<Sealed[]> => {
    // A write finding none in flight goes at once; its own statement answers its own rows.
    const byOrg = queues.get(db) ?? new Map<string, Waiting<T>[]>();
    queues.set(db, byOrg);
    const queue = byOrg.get(orgId);
    if (queue) return new Promise((resolve, reject) => queue.push({ items, resolve, reject }));
    byOrg.set(orgId, []);
    return drain(db, byOrg, orgId, seal(db, items));
  };
}

const appendGrouped = groupedSealer(insertAuditRows, 'rows');

/**
 * Appends rows of one organization as insertAuditRows does, grouped with this process's concurrent writes of the
 * organization (groupedSealer). Rows of several organizations go straight to insertAuditRows.
 */
export function appendAuditRows(db: Db, rows: AuditRowInput[]): Promise<Sealed[]> {
  const orgId = rows[0]?.orgId;
  if (orgId === undefined || rows.some((row) => row.orgId !== orgId)) return insertAuditRows(db, rows);
  return appendGrouped(db, orgId, rows);
}

const sealGrouped = groupedSealer(sealAuditIntents, 'nothing');

/**
 * Seals committed audit intents of one organization (their ids) into the chain, grouped with this process's concurrent
 * seals of the organization. An intent already sealed (by the sweep) is skipped: each becomes one entry.
 */
export async function sealIntentsOf(db: Db, orgId: string, ids: string[]): Promise<void> {
  await sealGrouped(db, orgId, ids);
}
