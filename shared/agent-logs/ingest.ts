import { releaseIngest, reserveIngest } from '../agents/ingest-budget.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { batchesOf } from '../db/insert-batch.ts';
import { logger, specifiedLog } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
import type { LogEntry } from './schemas.ts';
import { insertLogBatch } from './store.ts';

/**
 * POST /agents/:id/logs (seed 4.3): the entries (validated whole beforehand: one bad entry is a 400 and
 * nothing is stored) are charged to the device's hourly budget (429 beyond it, nothing stored), then
 * inserted 100 per statement. Each batch is stored whole or not at all. A failing batch is logged
 * (seed 7) and the following batches are still tried, so one batch the database refuses does not cost
 * the others; the reply says how many were stored and which index ranges were not (and their budget is
 * given back). When no batch could be stored the request fails with the database's error (503 when it
 * is unreachable), so the agent sends it all again. Diagnostic logs write no audit row (DESIGN.md).
 */
export async function submitLogs(db: Db, caller: AgentPrincipal, agentId: string, logs: readonly LogEntry[]) {
  const device = await deviceOfAgent(db, caller, agentId);
  if (logs.length === 0) return { received: 0 };
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
