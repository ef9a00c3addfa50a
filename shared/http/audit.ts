import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { onAuditSealed } from '../audit/sealed.ts';
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import { armAfterSeal } from '../audit-streams/arm.ts';
import { clientAddress } from '../client-ip.ts';
import { appDb } from '../db/client.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import type { HttpContext } from './authenticate.ts';

/**
 * The Db audit writes use: the API's, outside any keyed request (they never claim its Idempotency-Key nor wait for its
 * commit); one per executor, so the concurrent requests of a process share the grouping of their seals.
 */
const auditDbs = new WeakMap<Db, Db>();
function auditDb(): Db {
  const db = appDb();
  let wrapped = auditDbs.get(db);
  if (!wrapped) {
    wrapped = unkeyedDb(db);
    auditDbs.set(db, wrapped);
  }
  return wrapped;
}

// The rows a request seals arm the delivery of its organization's audit streams, once committed.
onAuditSealed(armAfterSeal);

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
      db: auditDb(),
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
