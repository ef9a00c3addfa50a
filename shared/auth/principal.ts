import type { Permission, Role } from './permissions.ts';

export type Scope = 'platform' | 'partner' | 'organization';

/** Who is calling: a user (JWT) or an API key. Agents are `AgentPrincipal`. */
export interface Principal {
  actorType: 'user' | 'api_key';
  /** User id (JWT sub) or API key id. */
  id: string;
  email: string | null;
  name: string | null;
  role: Role;
  scope: Scope;
  partnerId: string | null;
  orgId: string | null;
  permissions: ReadonlySet<Permission>;
}

export interface AgentPrincipal {
  actorType: 'agent';
  agentId: string;
  deviceId: string;
  orgId: string;
}
