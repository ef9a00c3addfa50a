/**
 * The access-log lines of the two APIs, one JSON object each, of variables each API type has: the request id, route
 * key, status, latency, integration error and source IP. Never the query string: an agent may pass its token in
 * `?token=` on $connect (shared/live-query/connections.ts). Plain text, without the CDK: the stack's stages take these
 * formats (access-log.ts), and the local gateways render the same lines from them (infra/local/access-log.ts).
 */
const json = (fields: Record<string, string>) => JSON.stringify(fields);

export const httpAccessLogFormat = json({
  requestId: '$context.requestId',
  requestTime: '$context.requestTimeEpoch',
  routeKey: '$context.routeKey',
  method: '$context.httpMethod',
  path: '$context.path',
  status: '$context.status',
  latencyMs: '$context.responseLatency',
  integrationError: '$context.integrationErrorMessage',
  sourceIp: '$context.identity.sourceIp',
});

export const webSocketAccessLogFormat = json({
  requestId: '$context.requestId',
  requestTime: '$context.requestTimeEpoch',
  routeKey: '$context.routeKey',
  eventType: '$context.eventType',
  connectionId: '$context.connectionId',
  status: '$context.status',
  latencyMs: '$context.integrationLatency',
  integrationError: '$context.integration.error',
  sourceIp: '$context.identity.sourceIp',
});
