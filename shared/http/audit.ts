import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import { clientAddress } from '../client-ip.ts';
import { appDb } from '../db/client.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import type { HttpContext } from './authenticate.ts';

export interface AuditHttpContext extends HttpContext {
  audit?: AuditContext;
}

/**
 * Gives the request its audit context, and awaits the audit writes it started before the
 * reply leaves, on success and on error alike (docs/audit.md).
 */
export const auditWrites = (): MiddlewareObj<
  APIGatewayProxyEventV2,
  APIGatewayProxyResultV2,
  Error,
  AuditHttpContext
> => ({
  before: async (request) => {
    const headers = request.event.headers ?? {};
    request.context.audit = {
      // Audit writes are not the request's change: they never claim its Idempotency-Key nor wait for its commit.
      db: unkeyedDb(appDb()),
      caller: request.context.caller,
      ipAddress: clientAddress(headers, request.event.requestContext.http.sourceIp),
      userAgent: headers['user-agent'] ?? null,
      pending: [],
    };
  },
  after: async (request) => {
    if (request.context.audit) await flushAudit(request.context.audit);
  },
  onError: async (request) => {
    if (request.context.audit) await flushAudit(request.context.audit);
  },
});
