import { charged, ingestCharge, releaseIngest, reserveIngest } from '../agents/ingest-budget.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentDevice } from '../agents/store.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { claimInStatement, type KeyedRequest, requestToClaim } from '../db/idempotency.ts';
import { batchesOf, insertBatchSize } from '../db/insert-batch.ts';
import { logger, specifiedLog } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
import type { LogEntry } from './schemas.ts';
import { insertChargedLogs, insertLogBatch } from './store.ts';
import { agentLogsStored } from './stored.ts';

/**
 * POST /agents/:id/logs: charged to the hourly budget and stored (docs/ARCHITECTURE.md "Diagnostic log ingestion").
 * An upload sent with an Idempotency-Key, or one that fits an insert batch, is one statement with its charge and the
 * key's claim and reply, stored whole or not at all: a resend within 24 hours gets the first reply and stores nothing.
 * A larger upload without a key is inserted in batches; a failing batch costs only itself and is reported, a request
 * with none stored fails.
 */
export async function submitLogs(db: Db, caller: AgentPrincipal, agentId: string, logs: readonly LogEntry[]) {
  const device = await deviceOfAgent(db, caller, agentId);
  if (logs.length === 0) return { received: 0 };
  const keyed = requestToClaim();
  if (keyed || logs.length <= insertBatchSize) return storeWhole(db, device, logs, keyed);
  return storeInBatches(db, device, logs);
}

/** The upload in one statement: the charge, the entries and, for a keyed request, its key and reply (insertChargedLogs). */
async function storeWhole(db: Db, device: AgentDevice, logs: readonly LogEntry[], keyed: KeyedRequest | undefined) {
  const answer = { received: logs.length };
  const charge = ingestCharge(device, 'logs', logs.length);
  let stored: Awaited<ReturnType<typeof insertChargedLogs>>;
  try {
    stored = keyed
      ? await claimInStatement(keyed, answer, (claim) => insertChargedLogs(db, charge, logs, claim))
      : await insertChargedLogs(db, charge, logs);
  } catch (error) {
    if (!keyed) specifiedLog.agentLogBatchFailed(device.id, error);
    throw error;
  }
  charged(stored, 'logs', logs.length);
  countMetric('AgentLogsStored', stored.received);
  await agentLogsStored(db, device.orgId);
  return answer;
}

async function storeInBatches(db: Db, device: AgentDevice, logs: readonly LogEntry[]) {
  const reservation = await reserveIngest(db, device, 'logs', logs.length);
  let received = 0;
  const failed: { from: number; to: number }[] = [];
  let firstError: unknown;
  for (const batch of batchesOf(logs)) {
    try {
      received += await insertLogBatch(db, device, batch.items);
    } catch (error) {
      specifiedLog.agentLogBatchFailed(device.id, error);
      failed.push({ from: batch.first, to: batch.first + batch.items.length - 1 });
      firstError ??= error;
    }
  }
  countMetric('AgentLogsStored', received);
  if (received > 0) await agentLogsStored(db, device.orgId);
  if (failed.length === 0) return { received };
  await releaseIngest(db, device, 'logs', reservation, logs.length - received).catch((error: unknown) => {
    logger.error('Could not give back the budget of unstored log entries', {
      deviceId: device.id,
      error: String(error),
    });
  });
  if (received === 0) throw firstError;
  return { received, failed };
}
