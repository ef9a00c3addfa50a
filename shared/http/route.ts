import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { z } from 'zod';
import type { AuditContext } from '../audit/writer.ts';
import type { AuthKind } from '../auth/authenticate.ts';
import type { PolicyKind } from '../policies/schemas.ts';
import type { CallerOf } from './authenticate.ts';

/**
 * What a route's Lambda may reach beyond the database and the work queue (which every API function may send to):
 * the agents' WebSocket connections, the enrollment secret, the key sealing enrollment keys, the audit anchors'
 * public key, the route table itself as data (every route key and the OpenAPI document, computed when the stack is
 * synthesized), sending e-mail through SES (notification channels), making and removing the logins of the stack's own
 * user pool (users). The stack grants a Lambda the union of its routes' grants.
 */
export type Grant =
  | 'agent-channel'
  | 'enrollment-secret'
  | 'seal-key'
  | 'anchor-public-key'
  | 'route-table'
  | 'send-mail'
  | 'user-logins';

/** One route as its domain declares it in functions/<domain>/routes.ts. */
export interface RouteDef {
  /** The Lambda serving the route; by default the one of the folder declaring it. */
  group?: string;
  grants?: readonly Grant[];
  /** The operation's name in the OpenAPI document, unique in the table and kept when code moves (clients use it). */
  operationId: string;
  auth: AuthKind;
  /**
   * An agent route that resolves its device's policies of this kind: they are read with the token, in the
   * authentication's one statement (shared/policies/agent-token.ts).
   */
  agentPolicies?: PolicyKind;
  summary: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Bodies above this many bytes (default 1 MiB) are refused with 413 before they are parsed (shared/http/body-limit.ts). */
  maxBodyBytes?: number;
  /** Status of a successful reply (default 200). */
  status?: 200 | 201 | 202 | 204;
  response?: z.ZodType;
  /**
   * A file download: answered as an attachment (Content-Disposition), in JSON or one of these text types. With
   * `jsonReply` only the text types are attachments and JSON is the route's ordinary reply (a report and its CSV).
   */
  download?: { textTypes: readonly string[]; jsonReply?: true };
  /** Error statuses the route can answer, for the OpenAPI document. */
  errors?: readonly number[];
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a handler receives: validated params, query and body, and the authenticated caller. */
export interface RequestOf<R extends RouteDef, Caller> {
  params: Out<R['params']>;
  query: Out<R['query']>;
  body: Out<R['body']>;
  caller: Caller;
  headers: Record<string, string | undefined>;
  /** The body as it arrived (UTF-8), for a route that checks a signature over it; a route with a `body` schema parses it. */
  rawBody: string;
  /** The connection's source IP as API Gateway reports it. */
  sourceIp: string;
  /** Who acts and from where, for audit events of this request (shared/audit/writer.ts). */
  audit: AuditContext;
}

/**
 * What a handler's function resolves to: nothing for a 204, a RawReply for a file download, else the input of the
 * route's response schema, so a reply its document does not describe fails to compile.
 */
export type ReplyOf<R extends RouteDef> = Promise<
  R['status'] extends 204
    ? void
    : R['download'] extends { jsonReply: true }
      ? RawReply | (R['response'] extends z.ZodType ? z.input<R['response']> : unknown)
      : R['download'] extends object
        ? RawReply
        : R['response'] extends z.ZodType
          ? z.input<R['response']>
          : unknown
>;

/** A route and the one domain call answering it, which httpHandler wraps (validation, authentication, errors). */
export type DeclaredRoute<R extends RouteDef = RouteDef> = R & {
  handle: (request: RequestOf<R, CallerOf<R['auth']>>) => ReplyOf<R>;
};

export const route = <const R extends RouteDef>(
  def: R,
  handle: (request: RequestOf<R, CallerOf<R['auth']>>) => ReplyOf<R>,
): DeclaredRoute<R> => ({ ...def, handle });

/**
 * A reply the domain shaped itself (a file download: its own content type, headers, maybe base64):
 * httpHandler passes it on unchanged instead of serializing the value as JSON with the route's status.
 */
export class RawReply {
  constructor(readonly result: APIGatewayProxyStructuredResultV2) {}
}
