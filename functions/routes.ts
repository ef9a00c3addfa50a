/**
 * The route table: the merge of the domains' tables (functions/<domain>/routes.ts), each route declared beside the
 * one domain call answering it and what its Lambda needs. The local gateways (infra/local), the Lambda entries
 * (infra/aws) and the OpenAPI document read it. Paths use API Gateway's `{name}` parameters.
 */
import { buildOpenApi } from '#shared/http/openapi.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes as agentLogs } from './agent-logs/routes.ts';
import { routes as agents } from './agents/routes.ts';
import { routes as alerts } from './alerts/routes.ts';
import { routes as audit } from './audit/routes.ts';
import { routes as auditStreams } from './audit-streams/routes.ts';
import { routes as auth } from './auth/routes.ts';
import { routes as automations } from './automations/routes.ts';
import { routes as billing } from './billing/routes.ts';
import { routes as contacts } from './contacts/routes.ts';
import { routes as customFields } from './custom-fields/routes.ts';
import { routes as deviceGroups } from './device-groups/routes.ts';
import { routes as eventLogs } from './event-logs/routes.ts';
import { routes as hierarchy } from './hierarchy/routes.ts';
import { routes as liveQuery } from './live-query/routes.ts';
import { routes as maintenance } from './maintenance/routes.ts';
import { routes as monitoring } from './monitoring/routes.ts';
import { routes as notifications } from './notifications/routes.ts';
import { routes as patching } from './patching/routes.ts';
import { routes as policies } from './policies/routes.ts';
import { routes as posture } from './posture/routes.ts';
import { routes as reconciliation } from './reconciliation/routes.ts';
import { routes as schedules } from './schedules/routes.ts';
import { routes as scripts } from './scripts/routes.ts';
import { provideRouteTable } from './system/route-table.ts';
import { routes as system } from './system/routes.ts';
import { routes as tenancyImport } from './tenancy-import/routes.ts';

/** Each folder's table, by folder name: a route's Lambda group is its folder unless it names another. */
export const domainRoutes = {
  'agent-logs': agentLogs,
  agents,
  alerts,
  audit,
  'audit-streams': auditStreams,
  auth,
  automations,
  billing,
  contacts,
  'custom-fields': customFields,
  'device-groups': deviceGroups,
  'event-logs': eventLogs,
  hierarchy,
  'live-query': liveQuery,
  maintenance,
  monitoring,
  notifications,
  patching,
  policies,
  posture,
  reconciliation,
  schedules,
  scripts,
  system,
  'tenancy-import': tenancyImport,
} as const;

export const routes = {
  ...agentLogs,
  ...agents,
  ...alerts,
  ...audit,
  ...auditStreams,
  ...auth,
  ...automations,
  ...billing,
  ...contacts,
  ...customFields,
  ...deviceGroups,
  ...eventLogs,
  ...hierarchy,
  ...liveQuery,
  ...maintenance,
  ...monitoring,
  ...notifications,
  ...patching,
  ...policies,
  ...posture,
  ...reconciliation,
  ...schedules,
  ...scripts,
  ...system,
  ...tenancyImport,
} as const satisfies Record<string, RouteDef>;

const declared = Object.values(domainRoutes).reduce((sum, table) => sum + Object.keys(table).length, 0);
if (Object.keys(routes).length !== declared) throw new Error('Two domains declare the same route key');

export const apiInfo = { title: 'Logbook API', version: '1' };

let document: ReturnType<typeof buildOpenApi> | undefined;
provideRouteTable({ keys: Object.keys(routes), document: () => (document ??= buildOpenApi(routes, apiInfo, [])) });

export type RouteKey = keyof typeof routes;

/**
 * What answers a request no route takes: API Gateway's $default route in the CDK stack, the fallback of the local
 * gateway. 404, or 405 with Allow for a path that exists under other methods, in the error envelope.
 */
export const defaultRoute = { handler: 'system/not-found', group: 'system', grants: ['route-table'] } as const;

/**
 * The WebSocket API: agents connect with their token and answer live queries
 * (shared/live-query). The local WebSocket gateway (infra/local/ws-gateway.ts) and the CDK stack read it.
 */
export const wsRoutes = {
  $connect: {
    handler: 'ws/connect',
    summary:
      "Authenticate the agent (Authorization: Bearer, or ?token=) and make this its device's live connection, replacing an older one",
  },
  $disconnect: { handler: 'ws/disconnect', summary: 'Forget the connection' },
  $default: {
    handler: 'ws/default',
    summary:
      "An agent's answer to a live query (or a chunk of one), a heartbeat or a patch result (its keep-alive, type ping, is taken by API Gateway)",
  },
} as const satisfies Record<'$connect' | '$disconnect' | '$default', { handler: string; summary: string }>;
