import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { type AuthKind, authenticateAgent, authenticatePrincipal } from '../auth/authenticate.ts';
import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { selectAgentAndKey } from '../auth/store.ts';
import { appDb } from '../db/client.ts';
import { keyDigestOf, type StoredKey } from '../db/idempotency.ts';
import { authenticateAgentWithPolicies } from '../policies/agent-token.ts';
import type { PolicyKind } from '../policies/schemas.ts';
import { keyReadWithToken, postKeyOf } from './agent-key.ts';

export type Caller = Principal | AgentPrincipal | null;
export type CallerOf<A extends AuthKind> = A extends 'user' | 'userOrApiKey'
  ? Principal
  : A extends 'agent'
    ? AgentPrincipal
    : null;

export interface HttpContext extends Context {
  caller?: Caller;
}

/**
 * An agent; a POST with an Idempotency-Key reads what the key holds in the token's statement, for the idempotency
 * middleware (no statement of its own).
 */
async function authenticateKeyedAgent(event: APIGatewayProxyEventV2, headers: Record<string, string | undefined>) {
  const key = postKeyOf(event);
  if (key === undefined) return authenticateAgent(appDb(), headers);
  let stored: StoredKey | null = null;
  const agent = await authenticateAgent(appDb(), headers, async (db, tokenHash) => {
    const row = await selectAgentAndKey(db, tokenHash, keyDigestOf(key));
    stored = row?.stored ?? null;
    return row;
  });
  keyReadWithToken(agent, key, stored);
  return agent;
}

/**
 * Authenticates the caller as the route's auth kind demands and keeps it on the context; an agent route naming its
 * policies reads them with the token.
 */
export const authenticate = (
  kind: AuthKind,
  agentPolicies?: PolicyKind,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2, Error, HttpContext> => ({
  before: async (request) => {
    const headers = request.event.headers ?? {};
    request.context.caller =
      kind === 'none'
        ? null
        : kind === 'agent'
          ? agentPolicies
            ? await authenticateAgentWithPolicies(appDb(), headers, agentPolicies)
            : await authenticateKeyedAgent(request.event, headers)
          : await authenticatePrincipal(appDb(), headers, kind === 'userOrApiKey');
  },
});
