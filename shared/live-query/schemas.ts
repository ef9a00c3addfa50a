import { z } from 'zod';
import { queryInstant } from '../agents/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { decimalInteger, levelParam, optionalParam } from '../request-values.ts';
import { liveEventLevels } from './protocol.ts';

/**
 * Path parameters of the live routes. The same routes live under /system-tools/devices/{deviceId}
 * and /devices/{id}: under /devices the parameter is `{id}`, as on every other
 * /devices/{id} route, since API Gateway refuses two names at one position of a path.
 */
const deviceId = z.uuid().meta({ description: 'The device id' });
const name = z.string().min(1).max(256).meta({
  description:
    'Event log name (e.g. Security, or Microsoft-Windows-Sysmon%2FOperational with its slash encoded), matched case-insensitively by the agent',
});
const recordId = decimalInteger({ min: 1, max: Number.MAX_SAFE_INTEGER }).meta({
  description: 'Record id of the event within its log',
});

export const systemToolsDeviceParams = z.object({ deviceId });
export const systemToolsLogParams = z.object({ deviceId, name });
export const systemToolsEventParams = z.object({ deviceId, name, recordId });
export const deviceLogParams = z.object({ id: deviceId, name });
export const deviceEventParams = z.object({ id: deviceId, name, recordId });

/** Query of the live event list: page and limit, and the filters the agent applies. */
export const liveEventsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 500 }),
  level: levelParam(liveEventLevels),
  source: optionalParam(z.string().max(255)).meta({
    description: 'Event source (provider), matched exactly but case-insensitively',
  }),
  startTime: queryInstant('Events created at or after this time'),
  endTime: queryInstant('Events created at or before this time'),
  eventId: optionalParam(decimalInteger({ min: 0, max: 4_294_967_295 })).meta({
    description: 'Event id (a number, e.g. 4625)',
  }),
});
export type LiveEventsQuery = z.output<typeof liveEventsQuery>;

/** Event log descriptor. Also the check of what an agent answers: extra fields are dropped. */
export const eventLogDescriptor = z
  .object({
    name: z.string().meta({ description: 'Internal log name' }),
    displayName: z.string(),
    recordCount: z.number().int().min(0),
    maxSize: z.number().min(0).meta({ description: 'Bytes' }),
    retentionDays: z.number(),
    lastWriteTime: z.string().meta({ description: "Timestamp of the log's last write" }),
  })
  .meta({ id: 'EventLogDescriptor' });

/** Live event entry. The level is read case-insensitively from the agent. */
export const liveEvent = z
  .object({
    recordId: z.number().int(),
    timeCreated: z.string(),
    level: z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(liveEventLevels)),
    source: z.string(),
    eventId: z.number().int(),
    message: z.string(),
    category: z.string(),
    user: z.string().nullable(),
    computer: z.string(),
    rawXml: z
      .string()
      .optional()
      .meta({ description: 'The event in the Windows event XML schema, when the agent has it' }),
  })
  .meta({ id: 'LiveEvent' });

export const eventLogDescriptorPage = pageOf(eventLogDescriptor).meta({ id: 'EventLogDescriptorPage' });
export const liveEventPage = pageOf(liveEvent).meta({ id: 'LiveEventPage' });

/** The `data` an agent answers to each query type (docs/live-query.md). */
export const agentData = {
  'eventlogs.list': z.array(eventLogDescriptor),
  'eventlogs.get': eventLogDescriptor,
  'eventlogs.events': z.object({ events: z.array(liveEvent), total: z.number().int().min(0) }),
  'eventlogs.event': liveEvent,
} as const;
