import { attemptDelivery } from '../alerts/psa-delivery.ts';
import { replayQueuedAuditRow } from '../audit/spool.ts';
import { appDb } from '../db/client.ts';
import { deliverPendingItems } from '../scripts/dispatch.ts';
import type { Job } from './work-queue.ts';

/** Runs one background job (shared/queue/work-queue.ts) on the application's database. */
export async function runJob(job: Job): Promise<void> {
  switch (job.kind) {
    case 'script-runs.deliver':
      return deliverPendingItems(appDb(), job);
    case 'psa.deliver':
      await attemptDelivery(appDb(), job.deliveryId);
      return;
    case 'audit.replay':
      return replayQueuedAuditRow(appDb(), job);
  }
}
