import { raiseScriptAlert } from '../alerts/raise.ts';
import { auditChange, flushAudit } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db, Tx } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import type { MappedSeverity } from './schemas.ts';
import type { FinishedItem, RunActor } from './store.ts';

/**
 * Finishes run items with `finish` (in one transaction) and records what each leaves behind: a `script.execute` row,
 * in that transaction, whose actor is who started the run and whose resource is the script (secret values are never
 * in a run record, so never here); and, once committed, when the exit code maps to a severity, an alert.
 * Answers the items finished.
 */
export async function finishItems(db: Db, finish: (tx: Tx) => Promise<FinishedItem[]>): Promise<FinishedItem[]> {
  const pending: Promise<void>[] = [];
  // The seals run after the commit, outside any keyed request.
  const sealDb = unkeyedDb(db);
  let items: FinishedItem[];
  try {
    items = await db.transaction(async (tx) => {
      const finished = await finish(tx);
      for (const item of finished)
        await auditChange(
          tx,
          { db: sealDb, caller: runStarter(item.startedBy), pending },
          {
            orgId: item.orgId,
            action: 'script.execute',
            resourceType: 'script',
            resourceId: item.scriptId,
            resourceName: item.scriptName,
            result: item.status === 'completed' && item.exitCode === 0 ? 'success' : 'failure',
            errorMessage: item.error?.message ?? null,
            ipAddress: null,
            userAgent: null,
            details: {
              runId: item.runId,
              runItemId: item.id,
              deviceId: item.deviceId,
              hostname: item.hostname,
              version: item.scriptVersion,
              status: item.status,
              exitCode: item.exitCode,
              durationMs: item.durationMs,
              parameters: item.parameters,
            },
          },
        );
      return finished;
    });
  } finally {
    // Also when the commit failed: one that landed anyway arms the sweep.
    await flushAudit({ db: sealDb, pending });
  }
  for (const item of items) {
    const severity = severityOf(item.mapping, item.status === 'completed' ? item.exitCode : null);
    if (severity !== 'none')
      await raiseScriptAlert(db, { ...item, runItemId: item.id, exitCode: item.exitCode! }, severity).catch(
        (error: unknown) =>
          logger.error('Could not raise the alert of a script run item', { runItemId: item.id, error: String(error) }),
      );
  }
  return items;
}

/** The principal who started a run, as the audit writer names actors. */
function runStarter(actor: RunActor): Principal {
  return {
    actorType: actor.actorType,
    id: actor.id,
    email: actor.email,
    name: actor.name,
    role: actor.role,
    scope: 'organization',
    partnerId: null,
    orgId: null,
    permissions: new Set(),
  };
}

/**
 * The severity an exit code raises: the script's mapping when it lists the code, else the default,
 * 0 nothing and any other code `medium`. A run item that failed or timed out has no exit code and raises nothing.
 */
export function severityOf(mapping: Record<string, MappedSeverity> | null, exitCode: number | null): MappedSeverity {
  if (exitCode === null) return 'none';
  return mapping?.[String(exitCode)] ?? (exitCode === 0 ? 'none' : 'medium');
}
