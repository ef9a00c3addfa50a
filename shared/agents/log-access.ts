import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { Forbidden, NotFound } from '../errors.ts';
import { selectDevice } from '../hierarchy/store.ts';
import { type AgentDevice, agentExists } from './store.ts';

/**
 * The device an agent acts for on `/agents/{id}/...`. The token was checked by the authentication
 * middleware (401) and named the agent's live device; here the path must name the agent itself:
 * another live agent's id is 403, an id no live device matches is 404.
 */
export async function deviceOfAgent(db: Db, caller: AgentPrincipal, agentId: string): Promise<AgentDevice> {
  if (agentId.toLowerCase() === caller.agentId)
    return { agentId: caller.agentId, id: caller.deviceId, orgId: caller.orgId };
  if (await agentExists(db, agentId)) throw Forbidden('An agent may only act for its own agent id');
  throw NotFound('Agent');
}

/**
 * The device whose stored logs a user or API key reads: logs:read, then the device as
 * GET /devices/:id finds it (another tenant's, or a deleted one, is 404).
 */
export async function deviceOfLogReader(db: Db, principal: Principal, deviceId: string) {
  requirePermission(principal, 'logs:read');
  return assertReachable(await selectDevice(db, principal, deviceId), 'Device');
}
