import type { Db, Tx } from '../db/db.ts';

/** Told which organizations' chains grew, once the rows are committed (audit streaming arms its delivery here). */
type SealedListener = (orgIds: string[]) => Promise<void>;
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
  const safely = () => tell(orgIds).catch(() => undefined);
  if ('afterCommit' in db) (db as Tx).afterCommit(() => void safely());
  else await safely();
}
