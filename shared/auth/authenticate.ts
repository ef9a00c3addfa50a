import type { Db } from '../db/db.ts';
import { Unauthenticated } from '../errors.ts';
import { verifyUserToken } from './jwt.ts';
import { rolePermissions } from './permissions.ts';
import type { AgentPrincipal, Principal } from './principal.ts';
import { hashSecret, isSecretShaped, secretPrefixes } from './secrets.ts';
import { selectAgentByToken, selectApiKey } from './store.ts';

/** How a route authenticates its caller (the `auth` column of functions/routes.ts). */
export type AuthKind = 'none' | 'user' | 'userOrApiKey' | 'agent';

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(headers: Record<string, string | undefined>): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
  return match?.[1];
}

/** A user JWT, or (kind `userOrApiKey`) an organization API key as bearer token or X-API-Key header. */
export async function authenticatePrincipal(
  db: Db,
  headers: Record<string, string | undefined>,
  allowApiKey: boolean,
): Promise<Principal> {
  const bearer = bearerToken(headers);
  const apiKey = headers['x-api-key'] ?? (bearer?.startsWith(secretPrefixes.apiKey) ? bearer : undefined);
  if (apiKey !== undefined) {
    if (!allowApiKey) throw Unauthenticated('This route needs a user token');
    const key = isSecretShaped(apiKey, secretPrefixes.apiKey) ? await selectApiKey(db, apiKey) : undefined;
    if (!key) throw Unauthenticated('Invalid API key');
    return {
      actorType: 'api_key',
      id: key.id,
      email: null,
      name: key.name,
      role: key.role,
      scope: 'organization',
      partnerId: key.partnerId,
      orgId: key.orgId,
      permissions: new Set(rolePermissions[key.role]),
    };
  }
  if (!bearer) throw Unauthenticated();
  return verifyUserToken(bearer);
}

/** How an agent's token is looked up: by its hash, the agent and its live device, or undefined. */
export type AgentLookup = (db: Db, tokenHash: string) => Promise<Omit<AgentPrincipal, 'actorType'> | undefined>;

/**
 * An agent's bearer token issued at enrollment. `lookup` may read more in the same statement (a route's policies:
 * shared/policies/agent-token.ts).
 */
export async function authenticateAgent(
  db: Db,
  headers: Record<string, string | undefined>,
  lookup: AgentLookup = selectAgentByToken,
): Promise<AgentPrincipal> {
  const token = bearerToken(headers);
  if (!token) throw Unauthenticated();
  const agent = isSecretShaped(token, secretPrefixes.agentToken) ? await lookup(db, hashSecret(token)) : undefined;
  if (!agent) throw Unauthenticated('Invalid or revoked agent token');
  return { actorType: 'agent', agentId: agent.agentId, deviceId: agent.deviceId, orgId: agent.orgId };
}
