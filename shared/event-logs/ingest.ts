import { reserveIngest } from '../agents/ingest-budget.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import { selectDeviceNames } from '../agents/store.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { batchesOf } from '../db/insert-batch.ts';
import { DomainError } from '../errors.ts';
import { deviceResource } from '../hierarchy/devices.ts';
import { specifiedLog } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
import type { DeviceEvent } from './schemas.ts';
import { insertEventBatch } from './store.ts';

/** The first of the events that share a source and eventId (NUL cannot occur in either: validate.ts refuses it). */
function withoutRepeats(events: readonly DeviceEvent[]): DeviceEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => {
    if (e.eventId == null) return true;
    const key = `${e.source}\u0000${e.eventId}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** An instant to the whole second (`floor` for a span's start, `ceil` for its end, so the span holds its events). */
const wholeSecond = (at: Date, round: (n: number) => number) =>
  new Date(round(at.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/**
 * PUT /agents/:id/eventlogs: duplicates, of stored events or within the submission, are
 * ignored and not counted. The whole submission is one transaction (every batch of 100 and the budget
 * charge), so a failure stores none of it and the agent simply sends it again: duplicates make that
 * safe. Only the events actually stored are charged to the device's hourly budget, so resending costs
 * nothing. Each submission writes one agent.eventlogs.submit audit row: the count stored, their time span, duplicates.
 */
export async function submitEvents(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  events: readonly DeviceEvent[],
  audit: AuditContext,
) {
  const device = await deviceOfAgent(db, caller, agentId);
  if (events.length === 0) return { success: true as const, count: 0 };
  const distinct = withoutRepeats(events);
  const count = await db
    .transaction(async (tx) => {
      // A used-up budget refuses before any insert; the device's budget row then stays locked to commit.
      await reserveIngest(tx, device, 'events', 0, 1);
      let inserted = 0;
      let first: Date | null = null;
      let last: Date | null = null;
      for (const batch of batchesOf(distinct)) {
        const stored = await insertEventBatch(tx, device, batch.items);
        inserted += stored.inserted;
        if (stored.first && (!first || stored.first < first)) first = stored.first;
        if (stored.last && (!last || stored.last > last)) last = stored.last;
      }
      // Only new events are charged; beyond the budget the 429 rolls back what was inserted.
      if (inserted > 0) await reserveIngest(tx, device, 'events', inserted);
      const names = (await selectDeviceNames(tx, device.id))!;
      // The most frequent row of a trail says which device stored how many events of which time span, and no more:
      // duplicates are named only when there were some (submitted = count + duplicates).
      await auditChange(
        tx,
        { ...audit, actorName: names.hostname },
        {
          orgId: device.orgId,
          action: 'agent.eventlogs.submit',
          ...deviceResource({ ...names, id: device.id }),
          details: {
            count: inserted,
            ...(first && last ? { from: wholeSecond(first, Math.floor), to: wholeSecond(last, Math.ceil) } : {}),
            ...(events.length > inserted ? { duplicates: events.length - inserted } : {}),
          },
        },
      );
      return inserted;
    })
    .catch((error: unknown) => {
      if (!(error instanceof DomainError)) specifiedLog.eventLogBatchFailed(device.id, error);
      throw error;
    });
  countMetric('DeviceEventsStored', count);
  return { success: true as const, count };
}
