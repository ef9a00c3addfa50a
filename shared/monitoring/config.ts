import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { monitoringOfAgent } from './evaluate.ts';
import * as store from './store.ts';
import { monitoringRetentionDays } from './store.ts';

/**
 * GET /agents/{id}/config: the device's effective monitoring items and the version the heartbeat reply carries, so
 * the agent fetches again only when it changed (and keeps working from its last config while offline).
 */
export async function getAgentConfig(db: Db, caller: AgentPrincipal, agentId: string) {
  const { effective } = await monitoringOfAgent(db, caller, agentId);
  return {
    configVersion: effective.configVersion,
    monitoring: effective.items.map((e) => ({ ...e.item, policyId: e.origin.policyId })),
  };
}

/** GET /devices/{id}/monitor-states: the state of each monitoring item on the device. */
export async function getMonitorStates(db: Db, principal: Principal, deviceId: string) {
  const device = await getDevice(db, principal, deviceId);
  requirePermission(principal, 'policies:read');
  const rows = await store.selectStates(db, device.id);
  return {
    data: rows.map(({ itemType, armedUntil: _, ...row }) => ({ ...row, type: itemType })),
  };
}

/** GET /devices/{id}/metrics: one metric's samples in a range (default: the last 24 hours), oldest first. */
export async function getMetrics(
  db: Db,
  principal: Principal,
  deviceId: string,
  query: { metric: string; volume?: string; from?: string; to?: string; limit: number },
) {
  const device = await getDevice(db, principal, deviceId);
  const to = query.to ?? new Date().toISOString();
  const from = query.from ?? new Date(Date.parse(to) - 86_400_000).toISOString();
  const rows = await store.selectSamples(db, device.id, query.metric, query.volume ?? null, from, to, query.limit);
  return {
    metric: query.metric as 'cpu.percent',
    samples: rows.map((r) => ({ volume: r.volume || null, value: r.value, timestamp: r.timestamp })),
  };
}

/** An organization's monitoring settings: how long its samples and check results are kept (null: the default). */
export async function getMonitoringSettings(db: Db, principal: Principal, orgId: string) {
  await reachableOrganization(db, principal, orgId, 'policies:read');
  const { rows } = await db.query<{ days: number | null }>(
    'SELECT monitoring_retention_days AS days FROM organizations WHERE id = :orgId::uuid',
    { orgId },
  );
  const days = rows[0]?.days ?? null;
  return { orgId, sampleRetentionDays: days ?? monitoringRetentionDays, override: days };
}

/** Sets the retention of samples and check results (null: back to the default); audited as organization.update. */
export async function putMonitoringSettings(
  db: Db,
  principal: Principal,
  orgId: string,
  body: { sampleRetentionDays: number | null },
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'orgs:write');
  await db.transaction(async (tx) => {
    const { rows } = await tx.query<{ before: number | null }>(
      `UPDATE organizations o SET monitoring_retention_days = :days::int
         FROM (SELECT monitoring_retention_days AS before FROM organizations WHERE id = :orgId::uuid FOR UPDATE) b
        WHERE o.id = :orgId::uuid RETURNING b.before`,
      { orgId, days: body.sampleRetentionDays },
    );
    if (rows[0]?.before === body.sampleRetentionDays) return;
    await auditChange(tx, audit, {
      orgId,
      action: 'organization.update',
      resourceType: 'organization',
      resourceId: orgId,
      resourceName: org.name,
      details: {
        before: { monitoringRetentionDays: rows[0]?.before ?? null },
        after: { monitoringRetentionDays: body.sampleRetentionDays },
      },
    });
  });
  return getMonitoringSettings(db, principal, orgId);
}
