import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { ValidationFailed } from '../errors.ts';
import { issueDetails } from '../http/error-envelope.ts';
import { logger } from '../logger.ts';
import { auditEvent, type AuditEvent } from './schemas.ts';
import { insertAuditRows, type AuditRowInput } from './store.ts';

export const zeroUuid = '00000000-0000-0000-0000-000000000000';
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Who acts, where from, and the writes still in flight; one per request (or per worker run). */
export interface AuditContext {
  db: Db;
  caller?: Principal | AgentPrincipal | null;
  /** Shown with the actor in the viewer: a user's name and role, an agent's device hostname. */
  actorName?: string | null;
  ipAddress?: string | null;
  userAgent?: string | null;
  /** Writes started for this request; the audit middleware awaits them before the reply leaves. */
  pending: Promise<void>[];
}

const quiet = () => process.env.NODE_ENV === 'test';

/**
 * The row of an event (seed 2.2): a non-UUID actorId or resourceId is stored as the zero UUID
 * with the original in details.rawActorId / details.rawResourceId.
 */
export function toAuditRow(event: AuditEvent & { orgId: string }): AuditRowInput {
  const parsed = auditEvent.safeParse(event);
  if (!parsed.success) throw ValidationFailed('Invalid audit event', issueDetails(parsed.error));
  const e = parsed.data;
  const details: Record<string, unknown> = { ...e.details };
  const actorId = uuidPattern.test(e.actorId) ? e.actorId : ((details.rawActorId = e.actorId), zeroUuid);
  const resourceId = e.resourceId == null || uuidPattern.test(e.resourceId) ? (e.resourceId ?? null) : ((details.rawResourceId = e.resourceId), zeroUuid);
  return {
    orgId: event.orgId,
    timestamp: e.timestamp ?? null,
    actorType: e.actorType,
    actorId: actorId.toLowerCase(),
    actorEmail: e.actorEmail ?? null,
    action: e.action,
    resourceType: e.resourceType ?? null,
    resourceId: resourceId?.toLowerCase() ?? null,
    resourceName: e.resourceName ?? null,
    details,
    ipAddress: e.ipAddress ?? null,
    userAgent: e.userAgent ?? null,
    result: e.result,
    errorMessage: e.errorMessage ?? null,
  };
}

/**
 * The low-level writer (seed 6 rule 2): validates and appends one event and resolves once it
 * is sealed. An event without orgId is dropped with a warning (silent in tests).
 */
export async function writeAuditEvent(context: AuditContext, event: AuditEvent): Promise<void> {
  if (!event.orgId) {
    if (!quiet()) console.warn('[audit] Dropped event (no orgId):', event.action);
    return;
  }
  await insertAuditRows(context.db, [toAuditRow({ ...event, orgId: event.orgId })]);
}

/**
 * Starts the write at once and never lets it fail the request (seed 6 rule 1). In Lambda an
 * unawaited promise is frozen with the environment, so the write is kept in `pending` and the
 * audit middleware awaits it before the reply leaves (DESIGN.md "Audit writes inside Lambda").
 */
export function createAuditLogAsync(context: AuditContext, event: AuditEvent): void {
  const write = writeAuditEvent(context, event).catch((error: unknown) => {
    if (!quiet()) console.error('[audit] Failed to write audit log:', error);
    logger.error('[audit] Failed to write audit log', { action: event.action, error: String(error) });
  });
  context.pending.push(write);
}

/**
 * For route handlers (seed 6 rule 3): the actor (id, e-mail, and name/role for the viewer) is
 * taken from the authenticated caller, the IP and user agent from the request.
 */
export function writeRouteAudit(context: AuditContext, event: Omit<AuditEvent, 'actorType' | 'actorId' | 'actorEmail'> & { orgId: string | null }): void {
  const caller = context.caller;
  const actor =
    caller?.actorType === 'agent'
      ? { actorType: 'agent' as const, actorId: caller.agentId, actorEmail: null, name: context.actorName ?? null, role: null }
      : caller
        ? { actorType: caller.actorType, actorId: caller.id, actorEmail: caller.email, name: caller.name, role: caller.role }
        : { actorType: 'system' as const, actorId: zeroUuid, actorEmail: null, name: null, role: null };
  createAuditLogAsync(context, {
    ipAddress: context.ipAddress,
    userAgent: context.userAgent,
    ...event,
    actorType: actor.actorType,
    actorId: actor.actorId,
    actorEmail: actor.actorEmail,
    details: { ...event.details, actor: { name: actor.name, role: actor.role } },
  });
}

/** Awaits every write of the request; failures were already logged. */
export async function flushAudit(context: AuditContext): Promise<void> {
  await Promise.allSettled(context.pending);
}
