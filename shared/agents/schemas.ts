import { z } from 'zod';

/**
 * Text PostgreSQL can store in jsonb: no lone UTF-16 surrogate (a JSON `\ud800` escape parses in
 * JavaScript but PostgreSQL refuses it). NUL characters are refused for every route by validate.ts.
 */
const loneSurrogate = /\p{Cs}/u;
const loneSurrogateMessage = 'Text must be valid Unicode (no lone surrogate)';

export function storableText(length: { min?: number; max?: number } = {}) {
  let text = z.string();
  if (length.min !== undefined) text = text.min(length.min);
  if (length.max !== undefined) text = text.max(length.max);
  return text.refine((value) => !loneSurrogate.test(value), loneSurrogateMessage);
}

/** The paths (below the value) of every key or string holding a lone surrogate. */
function surrogatePaths(value: unknown, path: PropertyKey[]): PropertyKey[][] {
  if (typeof value === 'string') return loneSurrogate.test(value) ? [path] : [];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => [
    ...(loneSurrogate.test(key) ? [path] : []),
    ...surrogatePaths(item, [...path, key]),
  ]);
}

/** A JSON object of arbitrary keys (seed 2.5 fields, 2.6 details); null reads as absent, as agents marshal empty maps. */
export const jsonObject = () =>
  z
    .record(z.string(), z.unknown())
    .superRefine((value, ctx) => {
      for (const path of surrogatePaths(value, []))
        ctx.addIssue({ code: 'custom', path, message: loneSurrogateMessage });
    })
    .nullish();

/** ISO 8601 within what PostgreSQL reads: a year from 0001 and an offset within ±15:59. */
const storableInstant = (v: string) => !v.startsWith('0000') && !/[+-](1[6-9]|2\d):\d\d$/.test(v);
const instantMessage = 'Give an ISO 8601 date and time with a year from 0001 and an offset within ±15:59';

/**
 * When an agent says something happened (seed 4.3 ISO 8601, 4.4 a string): ISO 8601 date and time,
 * with an offset or Z; without one it is read as UTC.
 */
export const agentTimestamp = () =>
  z.iso
    .datetime({ offset: true, local: true, message: 'Give an ISO 8601 date and time, e.g. 2026-01-15T10:30:00Z' })
    .refine(storableInstant, instantMessage)
    .meta({
      description:
        'ISO 8601 date and time; without an offset it is UTC. More than 10 minutes ahead of the server it is stored as the receipt time, the text kept as originalTimestamp',
    });

/** Text of an ISO 8601 date and time that PostgreSQL reads as UTC when it names no offset. */
export const asUtc = (text: string) => (/(?:z|[+-]\d\d:\d\d)$/i.test(text) ? text : `${text}Z`);

/** An empty query parameter (`?level=`, as viewers send them) is no filter. */
export const optionalParam = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

/** A time filter of a list query (ISO 8601; without an offset it is UTC), as ISO 8601 text with an offset. */
export const queryInstant = (description: string) =>
  optionalParam(
    z.iso.datetime({ offset: true, local: true }).refine(storableInstant, instantMessage).transform(asUtc),
  ).meta({
    description: `${description} (ISO 8601; without an offset it is UTC)`,
  });

/** A comma-separated list of enum values in one query parameter (`level=warn,error`), deduplicated. */
export const enumList = <const T extends readonly [string, ...string[]]>(values: T) =>
  optionalParam(
    z
      .string()
      .transform((text) => [...new Set(text.split(',').map((part) => part.trim()))])
      .pipe(z.array(z.enum(values))),
  ).meta({ description: `One or more of ${values.join(', ')}, comma-separated` });

/** The agent routes' path: `/agents/{id}` names the calling agent itself. */
export const agentParams = z.object({
  id: z.uuid().meta({ description: 'The agent id (enrollment reply agentId); only the agent itself may use it' }),
});

/** What an agent may report about itself in its heartbeat. */
export const agentStatuses = ['online', 'degraded', 'maintenance'] as const;

/** Unknown fields are dropped, not refused: an agent newer than this server still checks in. */
export const heartbeat = z
  .object({
    agentVersion: z.string().trim().min(1).max(50).nullish(),
    serialNumber: z
      .string()
      .max(255)
      .nullish()
      .meta({ description: 'The machine serial number; placeholders are ignored, the stored one kept' }),
    status: z.enum(agentStatuses).nullish().meta({
      description:
        'online: working normally; degraded: running with a failing subsystem; maintenance: updating or paused on purpose',
    }),
  })
  .meta({ id: 'Heartbeat' });

export const heartbeatReply = z
  .object({
    ok: z.literal(true),
    serverTime: z.iso
      .datetime({ offset: true })
      .meta({ description: 'The server clock, for the agent to notice its own drift' }),
  })
  .meta({ id: 'HeartbeatReply' });

const budget = z.number().int().min(0).max(10_000_000);

/** PUT body: an absent field stays as it is; null returns it to the default. */
export const updateIngestLimits = z
  .object({
    logsPerDeviceHour: budget
      .nullable()
      .optional()
      .meta({ description: 'Diagnostic log entries each device may submit per clock hour; null: the default' }),
    eventsPerDeviceHour: budget
      .nullable()
      .optional()
      .meta({ description: 'Event log entries each device may store per clock hour; null: the default' }),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');

export const ingestLimits = z
  .object({
    orgId: z.uuid(),
    logsPerDeviceHour: budget.meta({ description: 'In force: the override, else the default' }),
    eventsPerDeviceHour: budget.meta({ description: 'In force: the override, else the default' }),
    overrides: z.object({ logsPerDeviceHour: budget.nullable(), eventsPerDeviceHour: budget.nullable() }),
  })
  .meta({ id: 'IngestLimits' });
