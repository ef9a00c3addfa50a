import { z } from 'zod';
import { agentTimestamp, jsonObject, queryInstant, storableText } from '../agents/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { atLeastOneField, levelList, optionalParam } from '../request-values.ts';

/** The levels of a diagnostic log entry. */
export const logLevels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof logLevels)[number];

/** Agent log entries per request. */
export const maxLogsPerRequest = 500;

/** One entry of POST /agents/:id/logs. Unknown fields are dropped, as for every agent request. */
export const logEntry = z.object({
  timestamp: agentTimestamp(),
  level: z.enum(logLevels),
  component: storableText({ min: 1, max: 100 }).meta({
    description: 'Agent subsystem, such as updater, heartbeat, ws',
  }),
  message: storableText(),
  fields: jsonObject().meta({ description: 'Structured key-value metadata; null or absent: {}' }),
  agentVersion: storableText({ max: 50 }).nullish(),
});
export type LogEntry = z.output<typeof logEntry>;

export const submitLogs = z
  .object({
    logs: z
      .array(logEntry)
      .max(maxLogsPerRequest)
      .meta({
        description: `At most ${maxLogsPerRequest} entries; one invalid entry rejects the request (400 naming body.logs.<index>.<field>) and stores nothing`,
      }),
  })
  .meta({ id: 'AgentLogSubmission' });

export const logsReceipt = z
  .object({
    received: z.number().int().meta({ description: 'Entries stored' }),
    failed: z
      .array(z.object({ from: z.number().int(), to: z.number().int() }))
      .optional()
      .meta({
        description:
          'Only when an insert batch failed: the index ranges (inclusive) of the entries not stored, to send again',
      }),
  })
  .meta({ id: 'AgentLogReceipt' });

export const diagnosticLogsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 1000 }),
  level: levelList(logLevels),
  component: optionalParam(z.string().max(100)).meta({ description: 'Exact component' }),
  since: queryInstant('Entries at or after this time'),
  until: queryInstant('Entries at or before this time'),
  search: optionalParam(z.string().max(255)).meta({
    description: 'Case-insensitive substring of the message; LIKE wildcards match literally',
  }),
});
export type DiagnosticLogsQuery = z.output<typeof diagnosticLogsQuery>;

export const diagnosticLog = z
  .object({
    id: z.uuid(),
    deviceId: z.uuid(),
    orgId: z.uuid(),
    timestamp: timestampReply,
    level: z.enum(logLevels),
    component: z.string(),
    message: z.string(),
    fields: z.record(z.string(), z.unknown()),
    agentVersion: z.string().nullable(),
    createdAt: timestampReply,
  })
  .meta({ id: 'DiagnosticLog' });

export const diagnosticLogPage = pageOf(diagnosticLog);

/** Days agent diagnostic logs and device event logs are kept when the organization set nothing. */
export const defaultLogRetention = { agentLogDays: 30, eventLogDays: 90 } as const;

const retentionDays = z.number().int().min(1).max(3650);

/** PUT /orgs/organizations/{id}/log-retention: a field left out keeps the value in force. */
export const updateLogRetention = atLeastOneField(
  z
    .object({
      agentLogDays: retentionDays.optional().meta({
        description: 'Days agent diagnostic logs are kept, by their own timestamp: an integer from 1 to 3650',
      }),
      eventLogDays: retentionDays
        .optional()
        .meta({ description: 'Days device event logs are kept, by their own timestamp: an integer from 1 to 3650' }),
    })
    .strict(),
);

export const logRetention = z
  .object({
    agentLogDays: z.number().int().meta({ description: 'Days agent diagnostic logs are kept (default 30)' }),
    eventLogDays: z.number().int().meta({ description: 'Days device event logs are kept (default 90)' }),
    configured: z.boolean().meta({
      description: 'Whether the values were set explicitly; false: the defaults, which the daily run prunes at',
    }),
  })
  .meta({ id: 'LogRetention' });
