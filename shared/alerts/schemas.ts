import { z } from 'zod';
import { queryInstant } from '../agents/schemas.ts';
import { pageOf, pageQuery, paginationSchema } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { urlProblem } from '../outbound/address.ts';
import { optionalParam } from '../request-values.ts';

export const severities = ['low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof severities)[number];
export const alertSources = ['script', 'monitor', 'automation'] as const;
export const alertStatuses = ['open', 'acknowledged', 'resolved'] as const;
export type AlertStatus = (typeof alertStatuses)[number];
export const deliveryEvents = ['alert.created', 'alert.acknowledged', 'alert.resolved'] as const;
export type DeliveryEvent = (typeof deliveryEvents)[number];

/** A time kept inside a jsonb value: text as PostgreSQL writes it (+00:00), never a Date. */
const jsonbTimestamp = z.iso.datetime({ offset: true });
/** Who acted on an alert or started a script run: the principal as it was then (users and API keys act). */
export const actorReply = z
  .object({
    actorType: z.enum(['user', 'api_key']),
    id: z.string(),
    email: z.string().nullable(),
    name: z.string().nullable(),
  })
  .strict();

export const alert = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    deviceId: z.uuid().nullable(),
    source: z.discriminatedUnion('type', [
      z
        .object({
          type: z.literal('script'),
          id: z.uuid().meta({ description: 'The run item that raised the alert' }),
          lastId: z.uuid().meta({ description: 'The run item of the latest occurrence' }),
        })
        .strict(),
      z
        .object({
          type: z.literal('automation'),
          id: z.uuid().meta({ description: 'The automation run that raised the alert' }),
          lastId: z.uuid().meta({ description: 'The automation run of the latest occurrence' }),
        })
        .strict(),
      z
        .object({
          type: z.literal('monitor'),
          policyId: z.uuid(),
          itemKey: z.string(),
          policyVersion: z.number().int().meta({ description: 'The version of the policy whose item fired' }),
        })
        .strict(),
    ]),
    severity: z.enum(severities),
    title: z.string(),
    details: z.record(z.string(), z.unknown()),
    status: z.enum(alertStatuses),
    occurrences: z.number().int().meta({ description: 'Repeats of the same failure while the alert was unresolved' }),
    lastOccurredAt: timestampReply,
    acknowledgedAt: timestampReply.nullable(),
    acknowledgedBy: actorReply.nullable(),
    resolvedAt: timestampReply.nullable(),
    resolvedBy: actorReply.nullable(),
    binding: z
      .object({
        target: z.enum(['tickets', 'psa', 'none']),
        ticketId: z.uuid().nullable(),
        integrationId: z.uuid().nullable(),
        psaTicketId: z.string().nullable().meta({ description: "The PSA's ticket id, when its answer carried one" }),
      })
      .strict(),
    createdAt: timestampReply,
    suppressedBy: z
      .object({ maintenanceWindowId: z.uuid() })
      .strict()
      .nullable()
      .meta({ description: 'The maintenance window in progress when it was raised: recorded, not notified' }),
  })
  .strict()
  .meta({ id: 'Alert' });

/** Totals are counted up to 1,000 (a list of a million alerts stays fast); totalExact says whether it is exact. */
export const alertPage = z
  .object({
    data: z.array(alert),
    pagination: paginationSchema.extend({ totalExact: z.boolean() }).strict(),
  })
  .strict()
  .meta({ id: 'AlertPage' });

export const listAlertsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  orgId: optionalParam(z.uuid()),
  status: optionalParam(z.enum(alertStatuses)),
  severity: optionalParam(z.enum(severities)),
  deviceId: optionalParam(z.uuid()),
  siteId: optionalParam(z.uuid()).meta({ description: "Alerts of the site's devices" }),
  sourceType: optionalParam(z.enum(alertSources)),
  source: optionalParam(z.enum(alertSources)).meta({ description: 'Same as sourceType' }),
  sourceId: optionalParam(z.uuid()).meta({
    description: 'The run item that raised the alert (script), or the policy whose item raised it (monitor)',
  }),
  from: queryInstant('Alerts created at or after this time'),
  to: queryInstant('Alerts created before this time'),
});
export type ListAlertsQuery = z.output<typeof listAlertsQuery>;

export const alertParams = z.object({ alertId: z.uuid() });
export const alertAction = z.object({ note: z.string().max(2000).optional() }).strict();

export const ticket = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    number: z.number().int().meta({ description: 'Numbered per partner from 1' }),
    title: z.string(),
    status: z.enum(['open', 'closed']),
    alertIds: z.array(z.uuid()),
    createdAt: timestampReply,
    closedAt: timestampReply.nullable(),
  })
  .strict()
  .meta({ id: 'Ticket' });
export const ticketPage = pageOf(ticket).meta({ id: 'TicketPage' });
export const ticketParams = z.object({ ticketId: z.uuid() });
export const listTicketsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  orgId: optionalParam(z.uuid()),
  status: optionalParam(z.enum(['open', 'closed'])),
});
export type ListTicketsQuery = z.output<typeof listTicketsQuery>;

/** A URL the service will call: refused here when its text alone is (shared/outbound/address.ts). */
const endpoint = z
  .url()
  .max(2048)
  // zod runs this check even when .url() refused the text: a text no URL parses is left to that refusal.
  .superRefine((text, ctx) => {
    const problem = URL.canParse(text) ? urlProblem(text) : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: `Refused URL: ${problem}` });
  })
  .meta({
    description:
      'https:// to a public address: loopback, link-local, private, shared, unique-local, multicast and reserved addresses (IPv4-mapped and NAT64 forms too), internal names and credentials in the URL are refused',
  });
const secret = z.string().min(16).max(512);

export const createIntegration = z
  .object({
    name: z.string().trim().min(1).max(255),
    url: endpoint,
    secret: secret.optional().meta({
      description:
        'Key of the HMAC-SHA256 signatures, sealed at rest and never returned; left out, one is generated and shown once in the reply',
    }),
    severities: z
      .array(z.enum(severities))
      .min(1)
      .transform((list) => [...new Set(list)])
      .default([...severities]),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers only' }),
  })
  .strict();
export type CreateIntegration = z.output<typeof createIntegration>;
export const updateIntegration = z
  .object({
    name: z.string().trim().min(1).max(255).optional(),
    url: endpoint.optional(),
    secret: secret.optional(),
    rotateSecret: z
      .literal(true)
      .optional()
      .meta({ description: 'Generate a new secret, shown once in the reply (instead of giving `secret`)' }),
    severities: z
      .array(z.enum(severities))
      .min(1)
      .transform((list) => [...new Set(list)])
      .optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change')
  .refine((body) => !(body.secret && body.rotateSecret), {
    path: ['rotateSecret'],
    message: 'Give a secret or rotateSecret, not both',
  });
export type UpdateIntegration = z.output<typeof updateIntegration>;

export const integration = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    name: z.string(),
    url: z.string(),
    severities: z.array(z.enum(severities)),
    secret: z.string().optional().meta({
      description: 'Only in the reply that generated it (a create without a secret, or rotateSecret): shown once',
    }),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'PsaIntegration' });
export const integrationPage = pageOf(integration).meta({ id: 'PsaIntegrationPage' });
export const integrationParams = z.object({ integrationId: z.uuid() });
export const listIntegrationsQuery = z.object(pageQuery({ defaultLimit: 50, maxLimit: 200 }));

export const delivery = z
  .object({
    id: z.uuid(),
    alertId: z.uuid(),
    integrationId: z.uuid(),
    event: z.enum(deliveryEvents),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    nextAttemptAt: timestampReply.nullable(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    log: z.array(
      z
        .object({
          at: jsonbTimestamp,
          statusCode: z.number().int().nullable(),
          error: z.string().nullable(),
          durationMs: z
            .number()
            .int()
            .nullable()
            .meta({ description: 'Null when the destination was refused (error `refused: <reason>`) and not called' }),
        })
        .strict(),
    ),
    deliveredAt: timestampReply.nullable(),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'AlertDelivery' });
export const deliveryPage = pageOf(delivery).meta({ id: 'AlertDeliveryPage' });

export const alertBinding = z
  .object({
    target: z.enum(['tickets', 'psa']),
    integrationId: z.uuid().nullable(),
    inherited: z.boolean().meta({ description: "The organization has no binding of its own: the partner's default" }),
  })
  .strict()
  .meta({ id: 'AlertBinding' });
export const putAlertBinding = z
  .object({ target: z.enum(['tickets', 'psa']), integrationId: z.uuid().optional() })
  .strict()
  .superRefine((body, ctx) => {
    if (body.target === 'psa' && !body.integrationId)
      ctx.addIssue({ code: 'custom', path: ['integrationId'], message: 'A PSA binding names its integration' });
    if (body.target === 'tickets' && body.integrationId)
      ctx.addIssue({ code: 'custom', path: ['integrationId'], message: 'Only a PSA binding names an integration' });
  });
export type PutAlertBinding = z.output<typeof putAlertBinding>;
export const partnerParams = z.object({ partnerId: z.uuid() });

/** POST /alerts/acknowledge and /alerts/resolve: up to 500 alerts at once. */
export const bulkAlertAction = z
  .object({
    alertIds: z
      .array(z.uuid())
      .min(1)
      .max(500)
      .transform((list) => [...new Set(list)]),
  })
  .strict();
export const bulkAlertReply = z
  .object({
    results: z.array(
      z
        .object({
          alertId: z.uuid(),
          outcome: z.enum(['acknowledged', 'resolved', 'not_found', 'invalid_state']),
          status: z
            .enum(alertStatuses)
            .nullable()
            .meta({ description: "The alert's status after the call; null when not found" }),
        })
        .strict(),
    ),
    changed: z.number().int(),
  })
  .strict()
  .meta({ id: 'BulkAlertReply' });
