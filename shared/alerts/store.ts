import type { AuditRowInput } from '../audit/store.ts';
import { zeroUuid } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one, prepared, type Tx } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { AlertStatus, CreateIntegration, DeliveryEvent, Severity, UpdateIntegration } from './schemas.ts';

/** Who acknowledged or resolved an alert: the principal's identity as it was then. */
type Actor = {
  actorType: 'user' | 'api_key';
  id: string;
  email: string | null;
  name: string | null;
};

const alertColumns = `a.id, a.org_id AS "orgId", a.device_id AS "deviceId",
  CASE a.source_type
    WHEN 'monitor' THEN jsonb_build_object('type', 'monitor', 'policyId', a.source_id, 'itemKey', a.details->>'itemKey',
                                           'policyVersion', a.details->'policyVersion')
    ELSE jsonb_build_object('type', a.source_type, 'id', a.source_id, 'lastId', a.last_source_id) END AS source,
  a.severity, a.title, a.details, a.status, a.occurrences, a.last_occurred_at AS "lastOccurredAt",
  a.acknowledged_at AS "acknowledgedAt", a.acknowledged_by AS "acknowledgedBy", a.resolved_at AS "resolvedAt",
  a.resolved_by AS "resolvedBy",
  jsonb_build_object('target', CASE WHEN a.ticket_id IS NOT NULL THEN 'tickets' WHEN a.psa_integration_id IS NOT NULL
                                    THEN 'psa' ELSE 'none' END,
                     'ticketId', a.ticket_id, 'integrationId', a.psa_integration_id, 'psaTicketId', a.psa_ticket_id) AS binding,
  a.created_at AS "createdAt",
  CASE WHEN a.suppressed_by IS NULL THEN NULL
       ELSE jsonb_build_object('maintenanceWindowId', a.suppressed_by -> 'maintenanceWindowId') END AS "suppressedBy"`;

export type AlertRow = {
  id: string;
  orgId: string;
  deviceId: string | null;
  source:
    | { type: 'script'; id: string; lastId: string }
    | { type: 'monitor'; policyId: string; itemKey: string; policyVersion: number };
  severity: Severity;
  title: string;
  details: Record<string, unknown>;
  status: AlertStatus;
  occurrences: number;
  lastOccurredAt: Date;
  acknowledgedAt: Date | null;
  acknowledgedBy: Actor | null;
  resolvedAt: Date | null;
  resolvedBy: Actor | null;
  binding: {
    target: 'tickets' | 'psa' | 'none';
    ticketId: string | null;
    integrationId: string | null;
    psaTicketId: string | null;
  };
  createdAt: Date;
  suppressedBy: { maintenanceWindowId: string } | null;
};

/**
 * Opens an alert, or, while one for the same failure (organization, device, source key) is unresolved, counts one
 * more occurrence on it. `created` tells which.
 */
export async function upsertAlert(
  db: Db,
  alert: {
    orgId: string;
    partnerId: string;
    deviceId: string;
    sourceType: 'script' | 'monitor' | 'automation';
    sourceId: string;
    sourceKey: string;
    severity: Severity;
    title: string;
    details: Record<string, unknown>;
  },
): Promise<{ alert: AlertRow; partnerId: string; created: boolean }> {
  const row = await one<AlertRow & { created: boolean; partnerId: string }>(
    db,
    `WITH a AS (
       INSERT INTO alerts AS a (org_id, partner_id, device_id, source_type, source_id, source_key, severity, title,
                                details, last_source_id)
       VALUES (:orgId::uuid, :partnerId::uuid, :deviceId::uuid, :sourceType::text, :sourceId::uuid, :sourceKey::text,
               :severity::text, :title::text, :details::jsonb, :sourceId::uuid)
       ON CONFLICT (org_id, device_id, source_key) WHERE status <> 'resolved'
       DO UPDATE SET occurrences = a.occurrences + 1, last_occurred_at = now(), last_source_id = EXCLUDED.source_id
       RETURNING a.*, (xmax = 0) AS created)
     SELECT ${alertColumns}, a.partner_id AS "partnerId", a.created FROM a`,
    alert,
  );
  const { created, partnerId, ...alertRow } = row!;
  return { alert: alertRow, partnerId, created };
}

/**
 * Alerts of live organizations the principal reaches. The direct conditions on a.org_id and a.partner_id (folded to
 * one by the planner for the caller's scope) let a list walk the (org_id | partner_id, created_at) indexes newest
 * first instead of sorting every alert of the tenant.
 */
const reachableAlert = `(:tenantScope::text <> 'organization' OR a.org_id = :tenantOrgId::uuid)
  AND (:tenantScope::text <> 'partner' OR a.partner_id = :tenantPartnerId::uuid)
  AND EXISTS (SELECT 1 FROM organizations o WHERE o.id = a.org_id AND o.deleted_at IS NULL AND ${orgTenantSql('o')})`;

export function selectAlert(db: Db, principal: Principal, id: string) {
  return one<AlertRow & { partnerId: string }>(
    db,
    `SELECT ${alertColumns}, a.partner_id AS "partnerId" FROM alerts a WHERE a.id = :id::uuid AND ${reachableAlert}`,
    { id, ...tenantParams(principal) },
  );
}

/** Totals are counted up to this many: beyond, the page says the total is not exact. */
const countCap = 1_000;

export async function selectAlerts(
  db: Db,
  principal: Principal,
  filter: {
    orgId?: string;
    status?: string;
    severity?: string;
    deviceId?: string;
    siteId?: string;
    sourceType?: string;
    source?: string;
    sourceId?: string;
    from?: string;
    to?: string;
  },
  page: Page,
) {
  const where = `alerts a WHERE ${reachableAlert}
      AND (:orgId::uuid IS NULL OR a.org_id = :orgId::uuid)
      AND (:status::text IS NULL OR a.status = :status::text)
      AND (:severity::text IS NULL OR a.severity = :severity::text)
      AND (:deviceId::uuid IS NULL OR a.device_id = :deviceId::uuid)
      AND (:siteId::uuid IS NULL OR a.device_id IN (SELECT d.id FROM devices d WHERE d.site_id = :siteId::uuid))
      AND (:sourceType::text IS NULL OR a.source_type = :sourceType::text)
      AND (:sourceId::uuid IS NULL OR a.source_id = :sourceId::uuid)
      AND (:from::timestamptz IS NULL OR a.created_at >= :from::timestamptz)
      AND (:to::timestamptz IS NULL OR a.created_at < :to::timestamptz)`;
  const params = {
    ...tenantParams(principal),
    orgId: filter.orgId ?? null,
    status: filter.status ?? null,
    severity: filter.severity ?? null,
    deviceId: filter.deviceId ?? null,
    siteId: filter.siteId ?? null,
    sourceType: filter.sourceType ?? filter.source ?? null,
    sourceId: filter.sourceId ?? null,
    from: filter.from ?? null,
    to: filter.to ?? null,
  };
  const [{ rows: counted }, { rows }] = await Promise.all([
    db.query<{ total: number }>(
      `SELECT count(*)::int AS total FROM (SELECT 1 FROM ${where} LIMIT ${countCap + 1}) capped`,
      params,
    ),
    db.query<AlertRow>(
      `SELECT ${alertColumns} FROM ${where} ORDER BY a.created_at DESC, a.id DESC LIMIT :limit::int OFFSET :offset::int`,
      { ...params, limit: page.limit, offset: (page.page - 1) * page.limit },
    ),
  ]);
  const counted_ = counted[0]!.total;
  const total = Math.max(Math.min(counted_, countCap), (page.page - 1) * page.limit + rows.length);
  return {
    data: rows,
    pagination: {
      page: page.page,
      limit: page.limit,
      total,
      totalPages: Math.ceil(total / page.limit),
      totalExact: counted_ <= countCap,
    },
  };
}

/** Acknowledges an open alert, or resolves an open or acknowledged one; undefined when its status does not allow it. */
export function changeAlertStatus(db: Db, id: string, to: 'acknowledged' | 'resolved', actor: Actor) {
  return one<AlertRow & { partnerId: string }>(
    db,
    `WITH a AS (
       UPDATE alerts SET status = :to::text,
              acknowledged_at = CASE WHEN :to::text = 'acknowledged' THEN now() ELSE acknowledged_at END,
              acknowledged_by = CASE WHEN :to::text = 'acknowledged' THEN :actor::jsonb ELSE acknowledged_by END,
              resolved_at = CASE WHEN :to::text = 'resolved' THEN now() ELSE resolved_at END,
              resolved_by = CASE WHEN :to::text = 'resolved' THEN :actor::jsonb ELSE resolved_by END
        WHERE id = :id::uuid
          AND (status = 'open' OR (:to::text = 'resolved' AND status = 'acknowledged'))
        RETURNING *)
     SELECT ${alertColumns}, a.partner_id AS "partnerId" FROM a`,
    { id, to, actor: { ...actor } },
  );
}

/**
 * Resolves an alert the system decided is over (a monitor whose condition cleared): no one resolved it, so
 * resolved_by stays empty. Undefined when it was resolved already.
 */
export function resolveAlertBySystem(db: Db, id: string) {
  return one<AlertRow & { partnerId: string; previousStatus: AlertStatus }>(
    db,
    `WITH b AS (SELECT id, status FROM alerts WHERE id = :id::uuid AND status <> 'resolved' FOR UPDATE),
     a AS (
       UPDATE alerts x SET status = 'resolved', resolved_at = now() FROM b WHERE x.id = b.id
        RETURNING x.*, b.status AS previous_status)
     SELECT ${alertColumns}, a.partner_id AS "partnerId", a.previous_status AS "previousStatus" FROM a`,
    { id },
  );
}

/** Every new alert is bound with this: prepared once per connection. */
const bindNewAlertSql = prepared(
  'logbook_alerts_bind_new',
  `WITH b AS (
       SELECT b.target, b.integration_id
         FROM organizations o JOIN alert_bindings b ON b.partner_id = o.partner_id AND (b.org_id = o.id OR b.org_id IS NULL)
        WHERE o.id = :orgId::uuid
        ORDER BY b.org_id IS NULL
        LIMIT 1),
     m AS (
       SELECT CASE WHEN b.target = 'psa' AND b.integration_id IS NOT NULL
                   THEN CASE WHEN i.severities ? :severity::text THEN 'psa' ELSE 'none' END
                   ELSE 'tickets' END AS target,
              i.id AS integration_id
         FROM (SELECT 1) one
         LEFT JOIN b ON true
         LEFT JOIN psa_integrations i ON b.target = 'psa' AND i.id = b.integration_id AND i.deleted_at IS NULL),
     e AS (
       SELECT e.value, e.n, e.value->>'action' = 'ticket.create' AS ticket
         FROM jsonb_array_elements(:entries::jsonb) WITH ORDINALITY AS e(value, n)),
     w AS (SELECT coalesce(jsonb_agg(e.value ORDER BY e.n), '[]') AS entries FROM e WHERE NOT e.ticket),
     x AS (
       SELECT a.ids, a.failure FROM w CROSS JOIN LATERAL audit_intents_add(w.entries) a WHERE jsonb_array_length(w.entries) > 0),
     r AS (
       INSERT INTO ticket_requests (alert_id, partner_id, org_id, ticket_id, title, entry, intent_ids)
       SELECT :id::uuid, :partnerId::uuid, :orgId::uuid, :ticketId::uuid, :title::text, e.value,
              coalesce(string_to_array((SELECT ids FROM x), ',')::bigint[], '{}')
         FROM m LEFT JOIN e ON e.ticket WHERE m.target = 'tickets'
       RETURNING alert_id),
     u AS (
       UPDATE alerts a SET psa_integration_id = m.integration_id
         FROM m WHERE a.id = :id::uuid AND m.target = 'psa'
       RETURNING a.id)
     SELECT m.target, CASE WHEN m.target = 'psa' THEN m.integration_id END AS "integrationId",
            (SELECT entries FROM w) AS entries, (SELECT ids FROM x) AS ids, (SELECT failure FROM x) AS failure
       FROM m`,
);

/**
 * Binds a new alert as its organization's binding says (else the partner's default, else tickets), and adds its audit
 * intents, in one statement: to the PSA integration of the binding when it is live and takes the alert's severity
 * (none when it does not), else to a ticket of the platform's own (id `ticketId`), requested here and numbered once the
 * raising transaction has committed (numberWaitingTickets). `entries` are the change's audit rows: the `ticket.create`
 * row goes with the request (written as an intent by its numbering), the others are added as intents now. Answers where
 * it went, and audit_intents_add's answer for the rows it added (auditChangeWith).
 */
export async function bindNewAlertRow(
  tx: Tx,
  alert: { id: string; partnerId: string; orgId: string; severity: Severity; title: string; ticketId: string },
  entries: AuditRowInput[],
) {
  const row = await one<{
    target: 'tickets' | 'psa' | 'none';
    integrationId: string | null;
    entries: AuditRowInput[];
    ids: string | null;
    failure: string | null;
  }>(tx, bindNewAlertSql, { ...alert, entries });
  return row!;
}

/**
 * Numbers the tickets waiting for a partner (ticket_requests) in one statement: takes every request waiting, advances
 * the partner's counter by their count (its row locked until the transaction commits), makes the tickets numbered next
 * in the order they were requested, points their alerts at them and adds their `ticket.create` intents with `#<number>`
 * as resourceName; an alert resolved before its request was numbered (the resolve found no ticket to close) gets its
 * ticket closed, with its `ticket.close` after the `ticket.create` in the name of whoever resolved the alert
 * (`resolved_by`; the system when a monitor did), as the resolve would have closed it. The alerts are locked in id
 * order. A request
 * another transaction is numbering is waited for and then left to it. Answers the audit rows
 * it added and audit_intents_add's answer (auditChangeWith), the raising transactions' own intents (`follows`: sealed
 * with these, first, so each `ticket.create` follows its `alert.create` in the trail), and how many tickets it made.
 */
export async function numberWaitingTicketRows(tx: Tx, partnerId: string) {
  const row = await one<{
    made: number;
    entries: AuditRowInput[];
    ids: string | null;
    failure: string | null;
    follows: string[];
  }>(
    tx,
    `WITH r AS (
       DELETE FROM ticket_requests WHERE partner_id = :partnerId::uuid
       RETURNING seq, alert_id, org_id, ticket_id, title, entry, intent_ids),
     c AS (
       INSERT INTO ticket_counters (partner_id, last_number) SELECT :partnerId::uuid, count(*) FROM r HAVING count(*) > 0
       ON CONFLICT (partner_id) DO UPDATE SET last_number = ticket_counters.last_number + EXCLUDED.last_number
       RETURNING last_number),
     al AS (
       SELECT a.id, a.status, a.resolved_by FROM alerts a WHERE a.id IN (SELECT alert_id FROM r) ORDER BY a.id FOR UPDATE),
     o AS (
       SELECT r.*, c.last_number - count(*) OVER () + row_number() OVER (ORDER BY r.seq) AS number,
              coalesce(al.status = 'resolved', false) AS resolved, al.resolved_by
         FROM r CROSS JOIN c LEFT JOIN al ON al.id = r.alert_id),
     t AS (
       INSERT INTO tickets (id, partner_id, org_id, number, title, status, closed_at)
       SELECT o.ticket_id, :partnerId::uuid, o.org_id, o.number, o.title,
              CASE WHEN o.resolved THEN 'closed' ELSE 'open' END, CASE WHEN o.resolved THEN now() END
         FROM o
       RETURNING id),
     u AS (
       UPDATE alerts a SET ticket_id = o.ticket_id FROM o WHERE a.id = o.alert_id
       RETURNING a.id),
     w AS (
       SELECT coalesce(jsonb_agg(e.entry ORDER BY e.number, e.step), '[]') AS entries
         FROM (SELECT o.number, 1 AS step, jsonb_set(o.entry, '{resourceName}', to_jsonb('#' || o.number)) AS entry
                 FROM o WHERE o.entry IS NOT NULL
               UNION ALL
               SELECT o.number, 2, jsonb_set(o.entry, '{resourceName}', to_jsonb('#' || o.number))
                        || jsonb_build_object(
                             'action', 'ticket.close', 'timestamp', NULL, 'ipAddress', NULL, 'userAgent', NULL,
                             'actorType', coalesce(o.resolved_by ->> 'actorType', 'system'),
                             'actorId', coalesce(o.resolved_by ->> 'id', '${zeroUuid}'),
                             'actorEmail', o.resolved_by ->> 'email',
                             'details', jsonb_build_object(
                               'alertId', o.alert_id, 'before', jsonb_build_object('status', 'open'),
                               'after', jsonb_build_object('status', 'closed'),
                               'actor', jsonb_build_object('name', o.resolved_by ->> 'name', 'role', NULL)))
                 FROM o WHERE o.entry IS NOT NULL AND o.resolved) e),
     x AS (
       SELECT a.ids, a.failure FROM w CROSS JOIN LATERAL audit_intents_add(w.entries) a WHERE jsonb_array_length(w.entries) > 0)
     SELECT (SELECT count(*) FROM t)::int AS made, (SELECT entries FROM w) AS entries,
            (SELECT ids FROM x) AS ids, (SELECT failure FROM x) AS failure,
            (SELECT coalesce(array_agg(i::text ORDER BY i), '{}') FROM o, unnest(o.intent_ids) i) AS follows`,
    { partnerId },
  );
  return row!;
}

export async function setPsaTicketId(db: Db, alertId: string, psaTicketId: string): Promise<void> {
  await db.query('UPDATE alerts SET psa_ticket_id = :psaTicketId::text WHERE id = :alertId::uuid', {
    alertId,
    psaTicketId,
  });
}

// Tickets

const ticketColumns = `t.id, t.org_id AS "orgId", t.number, t.title, t.status,
  coalesce((SELECT jsonb_agg(x.id ORDER BY x.created_at) FROM alerts x WHERE x.ticket_id = t.id), '[]') AS "alertIds",
  t.created_at AS "createdAt", t.closed_at AS "closedAt"`;
type TicketRow = {
  id: string;
  orgId: string;
  number: number;
  title: string;
  status: 'open' | 'closed';
  alertIds: string[];
  createdAt: Date;
  closedAt: Date | null;
};
const reachableTicket = `EXISTS (SELECT 1 FROM organizations o WHERE o.id = t.org_id AND o.deleted_at IS NULL AND ${orgTenantSql('o')})`;

export async function closeTicket(db: Db, id: string): Promise<{ number: number } | undefined> {
  return one<{ number: number }>(
    db,
    `UPDATE tickets SET status = 'closed', closed_at = now() WHERE id = :id::uuid AND status = 'open' RETURNING number`,
    { id },
  );
}

export function selectTicket(db: Db, principal: Principal, id: string) {
  return one<TicketRow>(db, `SELECT ${ticketColumns} FROM tickets t WHERE t.id = :id::uuid AND ${reachableTicket}`, {
    id,
    ...tenantParams(principal),
  });
}

export function selectTickets(db: Db, principal: Principal, filter: { orgId?: string; status?: string }, page: Page) {
  return selectPage<TicketRow>(
    db,
    ticketColumns,
    `tickets t WHERE ${reachableTicket}
       AND (:orgId::uuid IS NULL OR t.org_id = :orgId::uuid) AND (:status::text IS NULL OR t.status = :status::text)`,
    't.created_at DESC, t.id DESC',
    { ...tenantParams(principal), orgId: filter.orgId ?? null, status: filter.status ?? null },
    page,
  );
}

// Bindings

/** The organization's binding, else the partner's default, else tickets. */
export async function selectEffectiveBinding(db: Db, orgId: string) {
  const row = await one<{ target: 'tickets' | 'psa'; integrationId: string | null; inherited: boolean }>(
    db,
    `SELECT b.target, b.integration_id AS "integrationId", b.org_id IS NULL AS inherited
       FROM organizations o JOIN alert_bindings b ON b.partner_id = o.partner_id AND (b.org_id = o.id OR b.org_id IS NULL)
      WHERE o.id = :orgId::uuid
      ORDER BY b.org_id IS NULL
      LIMIT 1`,
    { orgId },
  );
  return row ?? { target: 'tickets' as const, integrationId: null, inherited: true };
}

export async function selectBinding(db: Db, partnerId: string, orgId: string | null) {
  return one<{ target: 'tickets' | 'psa'; integrationId: string | null }>(
    db,
    `SELECT target, integration_id AS "integrationId" FROM alert_bindings
      WHERE partner_id = :partnerId::uuid AND org_id IS NOT DISTINCT FROM :orgId::uuid`,
    { partnerId, orgId },
  );
}

export async function upsertBinding(
  db: Db,
  binding: { partnerId: string; orgId: string | null; target: string; integrationId: string | null },
): Promise<void> {
  await db.query(
    `INSERT INTO alert_bindings (partner_id, org_id, target, integration_id)
     VALUES (:partnerId::uuid, :orgId::uuid, :target::text, :integrationId::uuid)
     ON CONFLICT (partner_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'))
     DO UPDATE SET target = EXCLUDED.target, integration_id = EXCLUDED.integration_id, updated_at = now()`,
    binding,
  );
}

// PSA integrations

const integrationColumns = `i.id, i.partner_id AS "partnerId", i.name, i.url, i.severities, i.created_at AS "createdAt",
  i.updated_at AS "updatedAt"`;
const reachableIntegration = `i.deleted_at IS NULL AND (:tenantScope::text = 'platform' OR i.partner_id = :tenantPartnerId::uuid)`;

export type IntegrationRow = {
  id: string;
  partnerId: string;
  name: string;
  url: string;
  severities: Severity[];
  createdAt: Date;
  updatedAt: Date;
};

/** A secret as stored: sealed, or in the clear (marked) when no seal key is set. */
export interface StoredSecret {
  secret: string;
  sealed: boolean;
}

export async function insertIntegration(
  db: Db,
  partnerId: string,
  input: Omit<CreateIntegration, 'secret'>,
  secret: StoredSecret,
) {
  const row = await one<IntegrationRow>(
    db,
    `INSERT INTO psa_integrations AS i (partner_id, name, url, secret, secret_sealed, severities)
     VALUES (:partnerId::uuid, :name::text, :url::text, :secret::text, :sealed::boolean, :severities::jsonb)
     RETURNING ${integrationColumns}`,
    { partnerId, name: input.name, url: input.url, ...secret, severities: input.severities },
  );
  return row!;
}

/** Integrations are partner-level: organization callers reach none (a partner or platform principal is required). */
export function selectIntegration(db: Db, principal: Principal, id: string) {
  return one<IntegrationRow>(
    db,
    `SELECT ${integrationColumns} FROM psa_integrations i WHERE i.id = :id::uuid AND ${reachableIntegration}`,
    { id, ...tenantParams(principal) },
  );
}

export function selectIntegrations(db: Db, principal: Principal, page: Page) {
  return selectPage<IntegrationRow>(
    db,
    integrationColumns,
    `psa_integrations i WHERE ${reachableIntegration}`,
    'i.name, i.id',
    tenantParams(principal),
    page,
  );
}

export async function updateIntegrationRow(
  db: Db,
  id: string,
  change: Omit<UpdateIntegration, 'secret' | 'rotateSecret'>,
  secret: StoredSecret | undefined,
) {
  const row = await one<IntegrationRow>(
    db,
    `UPDATE psa_integrations i SET name = coalesce(:name::text, name), url = coalesce(:url::text, url),
            secret = coalesce(:secret::text, secret), secret_sealed = coalesce(:sealed::boolean, secret_sealed),
            severities = coalesce(:severities::jsonb, severities), updated_at = now()
      WHERE i.id = :id::uuid AND i.deleted_at IS NULL
      RETURNING ${integrationColumns}`,
    {
      id,
      name: change.name,
      url: change.url,
      secret: secret?.secret,
      sealed: secret?.sealed,
      severities: change.severities,
    },
  );
  return row!;
}

/** Seals a secret stored in the clear (written before secrets were sealed), unless it changed meanwhile. */
export async function updateIntegrationSecretSealed(db: Db, id: string, plain: string, sealed: string): Promise<void> {
  await db.query(
    `UPDATE psa_integrations SET secret = :sealed::text, secret_sealed = true
      WHERE id = :id::uuid AND NOT secret_sealed AND secret = :plain::text`,
    { id, plain, sealed },
  );
}

/** Soft delete; bindings that named it fall back to tickets. */
export async function softDeleteIntegration(tx: Tx, id: string): Promise<void> {
  await tx.query('UPDATE psa_integrations SET deleted_at = now() WHERE id = :id::uuid', { id });
  await tx.query(
    `UPDATE alert_bindings SET target = 'tickets', integration_id = NULL, updated_at = now()
      WHERE integration_id = :id::uuid`,
    { id },
  );
}

/** A live integration: its partner, and the severities it takes. */
export function selectDeliveryTarget(db: Db, integrationId: string) {
  return one<{ id: string; partnerId: string; severities: Severity[] }>(
    db,
    `SELECT id, partner_id AS "partnerId", severities FROM psa_integrations
      WHERE id = :integrationId::uuid AND deleted_at IS NULL`,
    { integrationId },
  );
}

// Deliveries

export async function insertDelivery(
  db: Db,
  delivery: { id: string; alertId: string; integrationId: string; event: DeliveryEvent; body: string },
): Promise<void> {
  await db.query(
    `INSERT INTO alert_deliveries (id, alert_id, integration_id, event, body, next_attempt_at)
     VALUES (:id::uuid, :alertId::uuid, :integrationId::uuid, :event::text, :body::text, now())`,
    delivery,
  );
}

/**
 * Takes a due delivery for one attempt: its next attempt moves `leaseSeconds` ahead, so a second worker holding the
 * same job finds it not due. Undefined when it is delivered, failed, not due at `now`, or its integration is gone.
 */
export function claimDelivery(db: Db, id: string, now: Date, leaseSeconds: number) {
  return one<{
    id: string;
    alertId: string;
    event: string;
    body: string;
    attempts: number;
    url: string;
    integrationId: string;
    secret: string;
    secretSealed: boolean;
  }>(
    db,
    `UPDATE alert_deliveries d SET next_attempt_at = :now::timestamptz + :leaseSeconds::int * interval '1 second'
       FROM psa_integrations i
      WHERE d.id = :id::uuid AND i.id = d.integration_id AND i.deleted_at IS NULL
        AND d.status = 'pending' AND d.next_attempt_at <= :now::timestamptz
      RETURNING d.id, d.alert_id AS "alertId", d.event, d.body, d.attempts, i.url, i.id AS "integrationId", i.secret,
                i.secret_sealed AS "secretSealed"`,
    { id, now, leaseSeconds },
  );
}

export async function recordAttempt(
  db: Db,
  id: string,
  attempt: {
    at: Date;
    statusCode: number | null;
    error: string | null;
    durationMs: number | null;
    outcome: 'delivered' | 'failed' | 'pending';
    nextAttemptAt: Date | null;
  },
): Promise<void> {
  await db.query(
    `UPDATE alert_deliveries SET attempts = attempts + 1, status = :outcome::text, next_attempt_at = :nextAttemptAt::timestamptz,
            last_status_code = :statusCode::int, last_error = :error::text,
            delivered_at = CASE WHEN :outcome::text = 'delivered' THEN :at::timestamptz END,
            log = log || jsonb_build_array(jsonb_build_object('at', :at::timestamptz, 'statusCode', :statusCode::int,
                                                               'error', :error::text, 'durationMs', :durationMs::int))
      WHERE id = :id::uuid`,
    { id, ...attempt },
  );
}

/** A delivery; its log's times are text, as jsonb keeps them. */
type DeliveryRow = {
  id: string;
  alertId: string;
  integrationId: string;
  event: DeliveryEvent;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  log: { at: string; statusCode: number | null; error: string | null; durationMs: number | null }[];
  deliveredAt: Date | null;
  createdAt: Date;
};

export function selectDeliveries(db: Db, alertId: string, page: Page) {
  return selectPage<DeliveryRow>(
    db,
    `d.id, d.alert_id AS "alertId", d.integration_id AS "integrationId", d.event, d.status, d.attempts,
     d.next_attempt_at AS "nextAttemptAt", d.last_status_code AS "lastStatusCode", d.last_error AS "lastError", d.log,
     d.delivered_at AS "deliveredAt", d.created_at AS "createdAt"`,
    'alert_deliveries d WHERE d.alert_id = :alertId::uuid',
    'd.created_at, d.id',
    { alertId },
    page,
  );
}
