import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { z } from 'zod';
import type { AuditContext } from '../audit/writer.ts';
import type { AuthKind } from '../auth/authenticate.ts';

/** One row of the route table (functions/routes.ts). */
export interface RouteDef {
  /** Handler module under functions/, without extension; it exports `handler`. */
  handler: string;
  auth: AuthKind;
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

export const route = <const R extends RouteDef>(def: R): R => def;

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a handler receives: validated params, query and body, and the authenticated caller. */
export interface RequestOf<R extends RouteDef, Caller> {
  params: Out<R['params']>;
  query: Out<R['query']>;
  body: Out<R['body']>;
  caller: Caller;
  headers: Record<string, string | undefined>;
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

/**
 * A reply the domain shaped itself (a file download: its own content type, headers, maybe base64):
 * httpHandler passes it on unchanged instead of serializing the value as JSON with the route's status.
 */
export class RawReply {
  constructor(readonly result: APIGatewayProxyStructuredResultV2) {}
}
