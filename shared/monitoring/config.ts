import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { effectivePoliciesOf } from '../policies/effective.ts';
import * as store from './store.ts';

/**
 * GET /agents/{id}/config: the device's effective monitoring items and the version the heartbeat reply carries, so
 * the agent fetches again only when it changed (and keeps working from its last config while offline).
 */
export async function getAgentConfig(db: Db, caller: AgentPrincipal, agentId: string) {
  const agent = await deviceOfAgent(db, caller, agentId);
  const resolved = await effectivePoliciesOf(db, agent.id, 'monitoring', agent.orgId);
  if (!resolved) throw NotFound('Agent');
  return {
    configVersion: resolved.effective.configVersion,
    monitoring: resolved.effective.items.map((e) => ({ ...e.item, policyId: e.origin.policyId })),
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
