import { batchesOf } from '../agents/batches.ts';
import { releaseIngest, reserveIngest } from '../agents/ingest-budget.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { onceForKey, parseIdempotencyKey, requestHash } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
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
 * is unreachable), so the agent sends it all again. With an Idempotency-Key (issue 13) the upload is one
 * transaction, stored whole or not at all, and a resend within 24 hours gets the first reply and stores nothing.
 * Diagnostic logs write no audit row (DESIGN.md).
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
    // issue 13: a resend after an unknown outcome gets the first reply; the upload is stored whole or not at all.
    const claim = { principalType: 'agent', principalId: caller.agentId, key, requestHash: requestHash(logs) };
    return db.transaction((tx) =>
      onceForKey(tx, 'agent_log_ingest_requests', claim, async () => {
        await reserveIngest(tx, device, 'logs', logs.length);
        let received = 0;
        for (const batch of batchesOf(logs)) received += await insertLogBatch(tx, device, batch.items);
        countMetric('AgentLogsStored', received);
        return { received };
      }),
    );
  }
  const reservation = await reserveIngest(db, device, 'logs', logs.length);
  let received = 0;
  const failed: { from: number; to: number }[] = [];
  let firstError: unknown;
  for (const batch of batchesOf(logs)) {
    try {
      received += await insertLogBatch(db, device, batch.items);
    } catch (error) {
      console.error(`[AgentLogs] Error batch inserting logs for device ${device.id}`, error);
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
