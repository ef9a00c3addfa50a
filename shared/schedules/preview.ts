import { ValidationFailed } from '../errors.ts';
import { type CompiledSchedule, compileSchedule, firstOccurrences, type Schedule, ScheduleProblem } from './engine.ts';

/**
 * Compiles a schedule a client gave, or answers 400 naming the field at fault under its name in the request
 * (`fields` maps the engine's names to the request's, e.g. start → query.dtstart).
 */
export function compileOrRefuse(
  schedule: Schedule,
  fields: Record<ScheduleProblem['field'], string>,
): CompiledSchedule {
  try {
    return compileSchedule(schedule);
  } catch (error) {
    if (!(error instanceof ScheduleProblem)) throw error;
    throw ValidationFailed(error.message, [{ path: fields[error.field], message: error.message, code: 'custom' }]);
  }
}

/** GET /schedules/preview: the first occurrences of a rule from DTSTART on, in local time and UTC. */
export function previewSchedule(query: {
  rrule?: string;
  dtstart: string;
  tz: string;
  count: number;
  exdate?: string;
}) {
  const exdates = query.exdate
    ?.split(',')
    .map((each) => each.trim())
    .filter(Boolean);
  const compiled = compileOrRefuse(
    { rrule: query.rrule, start: query.dtstart, timezone: query.tz, exdates },
    { rrule: 'query.rrule', start: 'query.dtstart', timezone: 'query.tz', exdates: 'query.exdate' },
  );
  return {
    rrule: query.rrule ?? null,
    dtstart: query.dtstart,
    timezone: compiled.zone,
    occurrences: firstOccurrences(compiled, query.count).map(({ key, local, utc }) => ({ key, local, utc })),
  };
}
