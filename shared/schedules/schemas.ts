import { z } from 'zod';
import { queryInstant } from '../agents/schemas.ts';
import { decimalInteger, optionalParam } from '../request-values.ts';
import { canonicalZone, plainDateTime } from './engine.ts';

/** An IANA time zone, kept in its canonical spelling. */
export const timezone = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .transform((zone, ctx) => {
    const canonical = canonicalZone(zone);
    if (!canonical)
      ctx.addIssue({ code: 'custom', message: 'Unknown time zone; give an IANA name such as Europe/Berlin' });
    return canonical ?? zone;
  })
  .meta({ description: 'IANA time zone, e.g. Europe/Berlin' });

/** A local date-time without offset: the wall time of the schedule's zone. */
export const localDateTime = z
  .string()
  .refine(plainDateTime, 'Give a local date-time without offset, e.g. 2027-03-21T02:30:00')
  .meta({ description: 'Local date-time without offset (YYYY-MM-DDTHH:MM[:SS])', example: '2027-03-21T02:30:00' });

/** An RFC 5545 RRULE value without the `RRULE:` prefix (checked in full by the engine). */
export const rruleText = z
  .string()
  .trim()
  .min(1)
  .max(500)
  .meta({ description: 'RFC 5545 RRULE without the RRULE: prefix', example: 'FREQ=WEEKLY;BYDAY=SU' });

/** What runs at an occurrence whose job comes late (the service was down): skipped, or run once within the grace. */
export const misfire = z
  .object({
    policy: z.enum(['skip', 'run-once-late']),
    graceMinutes: z.number().int().min(0).max(10_080).default(60),
  })
  .strict()
  .meta({ id: 'MisfirePolicy' });
export type Misfire = z.output<typeof misfire>;

export const occurrence = z
  .object({
    key: z.string().meta({ description: 'The local date-time the rule names: the occurrence key in its schedule' }),
    local: z.string().meta({ description: 'The local date-time it runs at, with its UTC offset' }),
    utc: z.iso.datetime(),
  })
  .strict()
  .meta({ id: 'Occurrence' });

export const previewQuery = z.object({
  rrule: optionalParam(rruleText),
  dtstart: localDateTime,
  tz: timezone,
  count: decimalInteger({ min: 1, max: 500 }).default(10).meta({ description: 'How many, from dtstart on (≤ 500)' }),
  exdate: optionalParam(z.string().max(4000)).meta({ description: 'EXDATEs: local date-times, comma-separated' }),
});

export const preview = z
  .object({
    rrule: z.string().nullable(),
    dtstart: z.string(),
    timezone: z.string(),
    occurrences: z.array(occurrence),
  })
  .strict()
  .meta({ id: 'SchedulePreview' });

export const occurrencesQuery = z.object({
  from: queryInstant('Occurrences at or after this time (default now)'),
  to: queryInstant('Occurrences before this time (default 90 days after from)'),
  limit: decimalInteger({ min: 1, max: 1000 }).default(100).meta({ description: 'At most this many (≤ 1,000)' }),
});
