import { releaseIngest, reserveIngest } from '../agents/ingest-budget.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { parseIdempotencyKey } from '../db/idempotency.ts';
import { batchesOf } from '../db/insert-batch.ts';
import { logger, specifiedLog } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
import type { LogEntry } from './schemas.ts';
import { insertLogBatch } from './store.ts';
import { agentLogsStored } from './stored.ts';

/**
 * POST /agents/:id/logs: charged to the hourly budget, inserted in batches; a failing batch costs only
 * itself and is reported, a request with none stored fails (docs/ARCHITECTURE.md "Diagnostic log ingestion").
 * With an Idempotency-Key the upload is one transaction, stored whole or not at all, which claims the key
 * (shared/http/idempotency.ts): a resend within 24 hours gets the first reply and stores nothing.
 */
export async function submitLogs(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  logs: readonly LogEntry[],
  keyHeader?: string,
) {
  const key = parseIdempotencyKey(keyHeader);
  const device = await deviceOfAgent(db, caller, agentId);
  if (logs.length === 0) return { received: 0 };
  if (key !== undefined) {
    // A resend after an unknown outcome gets the first reply; the upload is stored whole or not at all.
    return db.transaction(async (tx) => {
      await reserveIngest(tx, device, 'logs', logs.length);
      let received = 0;
      for (const batch of batchesOf(logs)) received += await insertLogBatch(tx, device, batch.items);
      countMetric('AgentLogsStored', received);
      await agentLogsStored(tx, device.orgId);
      return { received };
    });
  }
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
