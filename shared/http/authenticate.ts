import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { type AuthKind, authenticateAgent, authenticatePrincipal } from '../auth/authenticate.ts';
import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { appDb } from '../db/client.ts';
import { authenticateAgentWithPolicies } from '../policies/agent-token.ts';
import type { PolicyKind } from '../policies/schemas.ts';

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
            : await authenticateAgent(appDb(), headers)
          : await authenticatePrincipal(appDb(), headers, kind === 'userOrApiKey');
  },
});
