import { z } from 'zod';
import { agentTimestamp, jsonObject, queryInstant, storableText } from '../agents/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { enumList, levelList, optionalParam } from '../request-values.ts';

/** The levels of a device event. */
export const eventLevels = ['info', 'warning', 'error', 'critical'] as const;
export const eventCategories = ['security', 'hardware', 'application', 'system'] as const;
export type EventLevel = (typeof eventLevels)[number];
export type EventCategory = (typeof eventCategories)[number];

/** Events per PUT /agents/:id/eventlogs: the seed sets none; ten insert batches of 100. */
export const maxEventsPerRequest = 1000;

/** One event of PUT /agents/:id/eventlogs. Unknown fields are dropped, as for every agent request. */
export const deviceEvent = z.object({
  timestamp: agentTimestamp(),
  level: z.enum(eventLevels),
  category: z.enum(eventCategories),
  source: storableText({ min: 1, max: 255 }).meta({ description: 'Source application or component' }),
  eventId: storableText({ min: 1, max: 100 }).nullish().meta({
    description:
      'Identifies this occurrence (e.g. the Windows event record id): an event with the source and eventId of one already stored is a duplicate and ignored. Events without one are always stored',
  }),
  message: storableText(),
  details: jsonObject().meta({ description: 'Extra structured data; null or absent: {}' }),
});
export type DeviceEvent = z.output<typeof deviceEvent>;

export const submitEvents = z
  .object({
    events: z
      .array(deviceEvent)
      .max(maxEventsPerRequest)
      .meta({
        description: `At most ${maxEventsPerRequest} events; one invalid event rejects the request (400 naming body.events.<index>.<field>) and stores nothing`,
      }),
  })
  .meta({ id: 'DeviceEventSubmission' });

export const eventsReceipt = z
  .object({
    success: z.literal(true),
    count: z
      .number()
      .int()
      .meta({ description: 'Events stored; duplicates (of stored events or within the submission) are not counted' }),
  })
  .meta({ id: 'DeviceEventReceipt' });

export const eventLogsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 500 }),
  category: enumList(eventCategories),
  level: levelList(eventLevels),
  source: optionalParam(z.string().max(255)).meta({ description: 'Exact source' }),
  startDate: queryInstant('Events at or after this time'),
  endDate: queryInstant('Events at or before this time'),
});
export type EventLogsQuery = z.output<typeof eventLogsQuery>;

export const deviceEventLog = z
  .object({
    id: z.uuid(),
    deviceId: z.uuid(),
    orgId: z.uuid(),
    timestamp: timestampReply,
    level: z.enum(eventLevels),
    category: z.enum(eventCategories),
    source: z.string(),
    eventId: z.string().nullable(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
    createdAt: timestampReply,
  })
  .meta({ id: 'DeviceEventLog' });

export const deviceEventLogPage = pageOf(deviceEventLog);
