import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import { logLevels } from '../agent-logs/schemas.ts';
import { auditCategories } from '../audit/categories.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { eventCategories, eventLevels } from '../event-logs/schemas.ts';
import { urlProblem } from '../outbound/address.ts';
import { streamFormats } from './formats.ts';

export const streamTypes = ['syslog-tls', 'syslog-tcp', 'https', 'splunk-hec', 's3'] as const;
export type StreamType = (typeof streamTypes)[number];
/** What a destination receives: the audit trail, device event logs, agent diagnostic logs (each from its own cursor). */
export const streamSources = ['audit', 'device-events', 'agent-logs'] as const;
export type StreamSource = (typeof streamSources)[number];

/** `host:port` of a syslog receiver: a name, an IPv4 address or a bracketed IPv6 address, and a port. */
const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):(\d{1,5})$/;
/** `bucket/prefix` of an S3 destination: a bucket name as S3 allows it, then an optional key prefix. */
const bucketPrefix = /^([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([A-Za-z0-9!_.*'()/-]{0,512}))?$/;

/** The URL the outbound check judges for an endpoint: syslog's `host:port` as the address it connects to. */
export function endpointUrl(type: StreamType, endpoint: string): string | undefined {
  if (type === 's3') return undefined;
  if (type === 'syslog-tls' || type === 'syslog-tcp') return `https://${endpoint}/`;
  return endpoint;
}

/** Why an endpoint's text is refused for its type, or undefined. */
export function endpointProblem(type: StreamType, endpoint: string): string | undefined {
  if (type === 's3')
    return bucketPrefix.test(endpoint) ? undefined : 'give bucket/prefix (an S3 bucket name, then a key prefix)';
  if (type === 'syslog-tls' || type === 'syslog-tcp') {
    const match = hostPort.exec(endpoint);
    if (!match) return 'give host:port';
    const port = Number(match[2]);
    if (port < 1 || port > 65535) return 'the port is 1 to 65535';
  } else if (!URL.canParse(endpoint)) return 'not a URL';
  const problem = urlProblem(endpointUrl(type, endpoint)!);
  return problem && `Refused endpoint: ${problem}`;
}

const secret = z.string().min(16).max(512);

const caCertificate = z
  .string()
  .max(32_768)
  .refine((pem) => {
    try {
      new X509Certificate(pem);
      return true;
    } catch {
      return false;
    }
  }, 'Not a PEM certificate')
  .meta({
    description: "A PEM certificate the TLS connection trusts besides the system's (syslog-tls, https, splunk-hec)",
  });

const filter = z
  .object({
    categories: z.array(z.enum(auditCategories)).min(1).max(auditCategories.length).optional(),
    actions: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(100)
      .optional()
      .meta({ description: 'Actions to send: exact, or a prefix ending in `*` (`device.*`)' }),
    deviceEvents: z
      .object({
        categories: z.array(z.enum(eventCategories)).min(1).max(eventCategories.length).optional(),
        levels: z.array(z.enum(eventLevels)).min(1).max(eventLevels.length).optional(),
      })
      .strict()
      .optional()
      .meta({ description: 'The device events to send (the device-events stream): by category and level' }),
    agentLogs: z
      .object({
        levels: z.array(z.enum(logLevels)).min(1).max(logLevels.length).optional(),
        components: z.array(z.string().min(1).max(100)).min(1).max(100).optional(),
      })
      .strict()
      .optional()
      .meta({ description: 'The diagnostic log entries to send (the agent-logs stream): by level and component' }),
  })
  .strict()
  .meta({ description: 'categories and actions select audit rows; deviceEvents and agentLogs select their streams' });
export type StreamFilter = z.output<typeof filter>;

const name = z.string().trim().min(1).max(255);
const streams = z
  .array(z.enum(streamSources))
  .min(1)
  .transform((list) => [...new Set(list)]);

/** The rules that depend on the type: the endpoint's shape, who takes a secret, who trusts a CA certificate. */
export function typedProblems(body: {
  type: StreamType;
  endpoint?: string;
  secret?: string;
  caCertificate?: string | null;
  rotateSecret?: true;
}): { field: string; message: string }[] {
  const { type } = body;
  const problems: { field: string; message: string }[] = [];
  const problem = body.endpoint === undefined ? undefined : endpointProblem(type, body.endpoint);
  if (problem) problems.push({ field: 'endpoint', message: problem });
  if (body.secret !== undefined && type !== 'https' && type !== 'splunk-hec')
    problems.push({ field: 'secret', message: 'Only https and splunk-hec destinations take a secret' });
  if (body.rotateSecret && type !== 'https')
    problems.push({ field: 'rotateSecret', message: 'Only the key of an https destination is generated' });
  if (body.caCertificate && (type === 'syslog-tcp' || type === 's3'))
    problems.push({ field: 'caCertificate', message: `A ${type} destination uses no TLS certificate` });
  return problems;
}

export const createStream = z
  .object({
    orgId: z.uuid().optional(),
    availability: z.enum(['organization', 'partner']).optional(),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers only, for availability partner' }),
    name,
    type: z.enum(streamTypes),
    format: z.enum(streamFormats),
    endpoint: z.string().trim().min(1).max(2048).meta({
      description:
        'host:port (syslog), a URL (https), the collector base URL (splunk-hec; /services/collector/event is appended), bucket/prefix (s3)',
    }),
    secret: secret.optional().meta({
      description:
        'https: the HMAC-SHA256 key (left out: generated, shown once); splunk-hec: the collector token (required). Sealed, never returned',
    }),
    caCertificate: caCertificate.optional(),
    streams: streams.default(['audit']),
    filter: filter.default({}),
    fromSeq: z.number().int().min(1).optional().meta({
      description:
        'Deliver the audit trail from this seq on (default: the rows written after the destination was created; the log streams always start there)',
    }),
  })
  .strict()
  .superRefine((body, ctx) => {
    const partner = body.availability === 'partner';
    if (partner && body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'A partner destination belongs to no organization' });
    if (!partner && !body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
    if (body.type === 'splunk-hec' && body.secret === undefined)
      ctx.addIssue({ code: 'custom', path: ['secret'], message: 'A splunk-hec destination needs its collector token' });
    for (const problem of typedProblems(body))
      ctx.addIssue({ code: 'custom', path: [problem.field], message: problem.message });
  });
export type CreateStream = z.output<typeof createStream>;

export const updateStream = z
  .object({
    name: name.optional(),
    format: z.enum(streamFormats).optional(),
    endpoint: z.string().trim().min(1).max(2048).optional(),
    secret: secret.optional(),
    rotateSecret: z.literal(true).optional().meta({ description: 'https: generate a new key, shown once' }),
    caCertificate: caCertificate.nullable().optional(),
    streams: streams.optional(),
    filter: filter.optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');
export type UpdateStream = z.output<typeof updateStream>;

export const auditStream = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z.uuid().nullable(),
    availability: z.enum(['organization', 'partner']),
    name: z.string(),
    type: z.enum(streamTypes),
    format: z.enum(streamFormats),
    endpoint: z.string(),
    caCertificate: z.string().nullable(),
    streams: z.array(z.enum(streamSources)),
    filter,
    hasSecret: z.boolean(),
    secret: z.string().optional().meta({ description: 'Only in the reply that generated it: shown once' }),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'AuditStream' });
export const auditStreamPage = pageOf(auditStream).meta({ id: 'AuditStreamPage' });
export const streamParams = z.object({ id: z.uuid() });
export const listStreamsQuery = z.object(pageQuery({ defaultLimit: 50, maxLimit: 200 }));

/** Where a destination stands in one stream of one organization; the seq is the stream's ordering key. */
const cursorStatus = {
  lastDeliveredSeq: z.number().int(),
  lastDeliveredAt: timestampReply.nullable(),
  lagRows: z.number().int(),
  lagSeconds: z.number(),
  nextAttemptAt: timestampReply.nullable(),
  lastError: z.string().optional(),
};
const streamCursorStatus = z
  .object({ stream: z.enum(streamSources), ...cursorStatus })
  .strict()
  .meta({
    id: 'AuditStreamCursorStatus',
    description:
      "One stream's cursor: the audit trail by seq, device-events and agent-logs by their ordering key (lagRows: keys not delivered yet)",
  });
export const organizationStatus = z
  .object({
    orgId: z.uuid(),
    ...cursorStatus,
    streams: z
      .array(streamCursorStatus)
      .optional()
      .meta({ description: "Every stream the destination receives (the fields above are the audit trail's)" }),
  })
  .strict()
  .meta({ id: 'AuditStreamOrganizationStatus' });
export type OrganizationStatus = z.input<typeof organizationStatus>;
export const streamStatus = z
  .object({ organizations: z.array(organizationStatus) })
  .strict()
  .meta({ id: 'AuditStreamStatus' });

export const replayBody = z
  .object({
    orgId: z.uuid(),
    fromSeq: z.number().int().min(1),
    stream: z
      .enum(streamSources)
      .default('audit')
      .meta({ description: "The stream to deliver again (fromSeq is its ordering key); the audit trail's by default" }),
  })
  .strict();

export const testReply = z
  .object({
    format: z.enum(streamFormats),
    line: z.string().meta({ description: "The test record rendered in the destination's format" }),
    lines: z.object({ rfc5424: z.string(), cef: z.string(), ocsf: z.string(), ndjson: z.string() }).strict(),
    delivered: z.boolean(),
    error: z.string().optional(),
  })
  .strict()
  .meta({ id: 'AuditStreamTest' });

export const witnessQuery = z.object({
  orgId: z.uuid().optional().meta({ description: "The organization (an organization user's own by default)" }),
});
const witnessed = z
  .object({
    orgId: z.uuid(),
    seq: z.number().int(),
    checksum: z.string(),
    firstRetainedSeq: z.number().int(),
    boundaryChecksum: z.string().nullable(),
    orgCount: z.number().int(),
    orgsDigest: z.string(),
    anchoredAt: z.string(),
    keyId: z.string(),
    signature: z.string(),
  })
  .strict()
  .meta({ id: 'WitnessedAnchor' });
export const witnessReply = z
  .object({
    orgId: z.uuid(),
    location: z.string().nullable().meta({ description: 'Where anchors are witnessed; null: no witness configured' }),
    anchors: z.array(witnessed).meta({ description: 'Every witnessed anchor of the organization, newest first' }),
    lastPublishedAt: z.string().nullable(),
    ageSeconds: z.number().nullable().meta({ description: 'How long ago the newest anchor was witnessed' }),
  })
  .strict()
  .meta({ id: 'AuditWitness' });
