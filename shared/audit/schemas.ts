import { z } from 'zod';

export const actorTypes = ['user', 'api_key', 'agent', 'system', 'ai_agent'] as const;
export type ActorType = (typeof actorTypes)[number];
export const auditResults = ['success', 'failure', 'denied'] as const;
export type AuditResult = (typeof auditResults)[number];

/**
 * One audit event as writers hand it over (seed 2.2). Identifiers may be any text:
 * a non-UUID is stored as the zero UUID with the original kept in details (seed 2.2 rules 1-2).
 */
export const auditEvent = z.object({
  orgId: z.uuid().nullish(),
  timestamp: z.iso.datetime({ offset: true }).optional().meta({ description: 'When the action occurred; defaults to now (seed 2.2)' }),
  actorType: z.enum(actorTypes),
  actorId: z.string().min(1).max(255),
  actorEmail: z.string().max(255).nullish(),
  action: z.string().min(1).max(100),
  resourceType: z.string().max(50).nullish(),
  resourceId: z.string().min(1).max(255).nullish(),
  resourceName: z.string().max(255).nullish(),
  details: z.record(z.string(), z.unknown()).optional(),
  ipAddress: z.string().max(45).nullish(),
  userAgent: z.string().max(4096).nullish(),
  result: z.enum(auditResults).default('success'),
  errorMessage: z.string().max(10_000).nullish(),
});
export type AuditEvent = z.input<typeof auditEvent>;
