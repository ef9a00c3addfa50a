import type { Db, Tx } from '../db/db.ts';

/** Told which organizations' chains grew, once the rows are committed (audit streaming arms its delivery here). */
type SealedListener = (orgIds: string[], db: Db | undefined) => Promise<void>;
let listener: SealedListener | undefined;

/** Registers the one listener (the composition layer registers audit streaming's; this domain knows none). */
export function onAuditSealed(registered: SealedListener): void {
  listener = registered;
}

/**
 * Rows of these organizations were sealed by a statement on `db`: the listener is told at once (a statement of its own
 * transaction, committed when it returned), or once the transaction that sealed them commits. Never throws.
 */
export async function auditSealed(db: Db, rows: readonly { orgId: string }[]): Promise<void> {
  const tell = listener;
  if (!tell || rows.length === 0) return;
  const orgIds = [...new Set(rows.map((row) => row.orgId))];
  // After a transaction's commit its connection is gone: the listener gets no Db to ask.
  if ('afterCommit' in db) (db as Tx).afterCommit(() => void tell(orgIds, undefined).catch(() => undefined));
  else await tell(orgIds, db).catch(() => undefined);
}
