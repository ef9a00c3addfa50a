import type { AfterCommit } from '../alerts/monitor-alerts.ts';
import { tellPsas } from '../alerts/monitor-alerts.ts';
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { likePattern } from '../db/like-pattern.ts';
import { submitEvents } from '../event-logs/ingest.ts';
import type { DeviceEvent } from '../event-logs/schemas.ts';
import { effectivePoliciesOf } from '../policies/effective.ts';
import type { EffectiveItem } from '../policies/resolve.ts';
import { enqueue } from '../queue/work-queue.ts';
import { applyEvaluations, evaluateOne, type Moved, previousOf } from './evaluate.ts';
import * as store from './store.ts';

/** The job re-judging an event-log item when its oldest counted event leaves the window. */
export const eventLogJobKind = 'monitoring.event-log';
export type EventLogJob = { kind: typeof eventLogJobKind; deviceId: string; itemKey: string };

/**
 * PUT /agents/{id}/eventlogs: the event-logs domain stores the events; then the device's event-log items are judged
 * over the events already ingested, when any was new.
 */
export async function submitEventsAndEvaluate(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  events: readonly DeviceEvent[],
  audit: AuditContext,
) {
  const reply = await submitEvents(db, caller, agentId, events, audit);
  if (reply.count > 0) await judgeEventLogItems(db, caller.deviceId, undefined, audit);
  return reply;
}

/** How many stored events of the device match the item in its window ending now, and when the n-th newest leaves it. */
async function countMatches(db: Db, deviceId: string, item: Record<string, unknown>) {
  const { rows } = await db.query<{ n: number; expires: Date | null }>(
    `SELECT count(*)::int AS n,
            (array_agg(e.timestamp ORDER BY e.timestamp DESC))[:count::int] + :window::int * interval '1 second' AS expires
       FROM device_event_logs e
      WHERE e.device_id = :deviceId::uuid AND e.timestamp > now() - :window::int * interval '1 second'
        AND e.timestamp <= now()
        AND (:source::text IS NULL OR e.source = :source::text)
        AND (:eventId::text IS NULL OR e.event_id = :eventId::text)
        AND (:level::text IS NULL OR e.level::text = :level::text)
        AND (:text::text IS NULL OR e.message ILIKE :text::text)`,
    {
      deviceId,
      count: Number(item.count),
      window: Number(item.windowSeconds),
      source: (item.source as string | undefined) ?? null,
      eventId: item.eventId === undefined ? null : String(item.eventId),
      level: (item.level as string | undefined) ?? null,
      text: typeof item.text === 'string' ? likePattern(item.text) : null,
    },
  );
  return rows[0]!;
}

/**
 * Judges the device's event-log items (all of them, or one a job names) now: the condition holds while at least
 * `count` matching events lie inside the window. A firing item arms a job for when its n-th newest match leaves the
 * window, so it clears without anything polling.
 */
export async function judgeEventLogItems(db: Db, deviceId: string, onlyKey?: string, audit?: AuditContext) {
  const context: AuditContext = audit ?? { db: unkeyedDb(db), caller: null, pending: [] };
  const after: AfterCommit[] = [];
  const rearm: { itemKey: string; at: Date }[] = [];
  try {
    await db.transaction(async (tx) => {
      await store.lockDevice(tx, deviceId);
      const resolved = await effectivePoliciesOf(tx, deviceId, 'monitoring');
      if (!resolved) return;
      const items = resolved.effective.items.filter(
        (e: EffectiveItem) => e.item.type === 'event-log' && (onlyKey === undefined || e.key === onlyKey),
      );
      if (items.length === 0) return;
      const states = new Map(
        (
          await store.selectStates(
            tx,
            deviceId,
            items.map((e) => e.key),
          )
        ).map((s) => [s.itemKey, s]),
      );
      const now = new Date();
      const written: store.StateRow[] = [];
      const moves: Moved[] = [];
      for (const e of items) {
        const { n, expires } = await countMatches(tx, deviceId, e.item);
        const bad = n >= Number(e.item.count);
        const list: store.StateRow[] = [];
        evaluateOne(
          e,
          previousOf(e, states.get(e.key) ?? null, now),
          { at: now, value: n, bad, good: !bad },
          [{ matches: n }],
          String(e.item.severity) as never,
          list,
          moves,
        );
        written.push(list[0]!);
        if (bad && expires) rearm.push({ itemKey: e.key, at: new Date(expires) });
      }
      await applyEvaluations(tx, context, resolved.device, written, moves, after);
    });
  } finally {
    if (!audit) await flushAudit(context);
  }
  await tellPsas(db, after);
  for (const { itemKey, at } of rearm) {
    const job: EventLogJob = { kind: eventLogJobKind, deviceId, itemKey };
    await enqueue(job, Math.max(0, (at.getTime() - Date.now()) / 1000) + 1);
  }
}
