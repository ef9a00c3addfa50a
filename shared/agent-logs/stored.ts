import type { Db, Tx } from '../db/db.ts';

/** Told which organizations stored diagnostic log entries, once they are committed (audit streaming arms here). */
type StoredListener = (orgIds: string[], db: Db | undefined) => Promise<void>;
let listener: StoredListener | undefined;

/** Registers the one listener (the composition layer registers audit streaming's; this domain knows none). */
export function onAgentLogsStored(registered: StoredListener): void {
  listener = registered;
}

/**
 * Entries of the organization were stored by `db`: the listener is told at once (statements of their own, committed),
 * or once the transaction that stored them commits (then without a Db to ask). Never throws.
 */
export async function agentLogsStored(db: Db | Tx, orgId: string): Promise<void> {
  const tell = listener;
  if (!tell) return;
  if ('afterCommit' in db) db.afterCommit(() => void tell([orgId], undefined).catch(() => undefined));
  else await tell([orgId], db).catch(() => undefined);
}
