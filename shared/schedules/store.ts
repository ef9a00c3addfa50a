import { type Db, one } from '../db/db.ts';

/**
 * Claims one phase of an occurrence (schedule type and id, the occurrence's local date-time key, the phase): true the
 * first time, false for any repeat, so the work of an occurrence is done once however often its job runs.
 */
export async function claimOccurrence(
  db: Db,
  run: { scheduleType: string; scheduleId: string; occurrenceKey: string; phase: string },
): Promise<boolean> {
  const row = await one(
    db,
    `INSERT INTO schedule_runs (schedule_type, schedule_id, occurrence_key, phase)
     VALUES (:scheduleType::text, :scheduleId::uuid, :occurrenceKey::text, :phase::text)
     ON CONFLICT DO NOTHING RETURNING 1`,
    run,
  );
  return row !== undefined;
}
