import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';

/** An API Gateway HTTP API (payload 2.0) event, for calling a handler directly. */
export function httpEvent(options: {
  method?: string;
  path?: string;
  routeKey?: string;
  headers?: Record<string, string>;
  body?: unknown;
  sourceIp?: string;
}): APIGatewayProxyEventV2 {
  const method = options.method ?? 'GET';
  const path = options.path ?? '/api/v1/test';
  return {
    version: '2.0',
    routeKey: options.routeKey ?? `${method} ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: { 'user-agent': 'vitest', ...options.headers },
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: options.sourceIp ?? '198.51.100.20', userAgent: 'vitest' },
      requestId: randomUUID(),
      routeKey: options.routeKey ?? `${method} ${path}`,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    isBase64Encoded: false,
  };
}

export const lambdaContext = {
  awsRequestId: randomUUID(),
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;
