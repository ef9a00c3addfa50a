import { z } from 'zod';
import { agentStatuses, deviceRoles } from '../hierarchy/schemas.ts';
import { agentInstant, asUtc } from '../instants.ts';
import { atLeastOneField, optionalParam } from '../request-values.ts';

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

/** A JSON object of arbitrary keys; null reads as absent, as agents marshal empty maps. */
export const jsonObject = () =>
  z
    .record(z.string(), z.unknown())
    .superRefine((value, ctx) => {
      for (const path of surrogatePaths(value, []))
        ctx.addIssue({ code: 'custom', path, message: loneSurrogateMessage });
    })
    .nullish();

/**
 * When an agent says something happened: ISO 8601 date and time,
 * with an offset or Z; without one it is read as UTC.
 */
export const agentTimestamp = () =>
  agentInstant().meta({
    description:
      'ISO 8601 date and time; without an offset it is UTC. More than 10 minutes ahead of the server it is stored as the receipt time, the text kept as originalTimestamp',
  });

/** A time filter of a list query (ISO 8601; without an offset it is UTC), as ISO 8601 text with an offset. */
export const queryInstant = (description: string) =>
  optionalParam(agentInstant().transform(asUtc)).meta({
    description: `${description} (ISO 8601; without an offset it is UTC)`,
  });

/** The agent routes' path: `/agents/{id}` names the calling agent itself. */
export const agentParams = z.object({
  id: z.uuid().meta({ description: 'The agent id (enrollment reply agentId); only the agent itself may use it' }),
});

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
    role: z.enum(deviceRoles).nullish().meta({ description: 'workstation or server; policy assignments narrow by it' }),
    rebootPending: z.boolean().nullish().meta({ description: 'The device waits for a reboot (patching)' }),
    lastBootAt: agentInstant().nullish().meta({ description: 'When the device last booted (ISO 8601)' }),
    osUpdaterSuppressed: z.boolean().nullish().meta({
      description: "Whether the OS's own updater is suppressed (patching rings decide installs); false is flagged",
    }),
  })
  .meta({ id: 'Heartbeat' });

export const heartbeatReply = z
  .object({
    ok: z.literal(true),
    serverTime: z.iso
      .datetime({ offset: true })
      .meta({ description: 'The server clock, for the agent to notice its own drift' }),
    configVersion: z.string().meta({
      description: 'The version of the effective monitoring config: when it changed, GET /agents/{id}/config',
    }),
    heartbeatSeconds: z.number().int().positive().meta({
      description:
        'When the server wants the next heartbeat: 60 s over HTTP; 900 s on a WebSocket connection, whose presence keeps the device online between heartbeats',
    }),
  })
  .meta({ id: 'HeartbeatReply' });

const budget = z.number().int().min(0).max(10_000_000);

/** PUT body: an absent field stays as it is; null returns it to the default. */
export const updateIngestLimits = atLeastOneField(
  z
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
    .strict(),
);

export const ingestLimits = z
  .object({
    orgId: z.uuid(),
    logsPerDeviceHour: budget.meta({ description: 'In force: the override, else the default' }),
    eventsPerDeviceHour: budget.meta({ description: 'In force: the override, else the default' }),
    overrides: z.object({ logsPerDeviceHour: budget.nullable(), eventsPerDeviceHour: budget.nullable() }),
  })
  .meta({ id: 'IngestLimits' });
