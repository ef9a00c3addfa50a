import middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { StoredReply } from '../db/idempotency.ts';
import { auditWrites } from './audit.ts';
import { authenticate, type CallerOf } from './authenticate.ts';
import { bodyLimit, defaultMaxBodyBytes } from './body-limit.ts';
import { errorEnvelope } from './error-envelope.ts';
import { answerOnce, idempotency, type KeyedHttpContext } from './idempotency.ts';
import { RawReply, type ReplyOf, type RequestOf, type RouteDef } from './route.ts';
import { utf8Body } from './utf8-body.ts';
import { validate } from './validate.ts';

export type Handler = (
  event: APIGatewayProxyEventV2,
  context: import('aws-lambda').Context,
) => Promise<APIGatewayProxyResultV2>;

/**
 * A route's Lambda handler: error envelope, authentication, JSON body, validation, the Idempotency-Key of a POST,
 * then the one domain call. The function returns the reply body; the status is the route's
 * (or a RawReply, passed on as it is).
 */
export function httpHandler<R extends RouteDef>(
  def: R,
  fn: (request: RequestOf<R, CallerOf<R['auth']>>) => ReplyOf<R>,
): Handler {
  const chain = middy<APIGatewayProxyEventV2, APIGatewayProxyResultV2, Error, KeyedHttpContext>().use(errorEnvelope());
  // An oversized body is refused first, as API Gateway refuses one above its own limit: no token lookup, no parsing.
  chain.use(bodyLimit(def.maxBodyBytes ?? defaultMaxBodyBytes));
  chain.use(authenticate(def.auth, def.agentPolicies)).use(auditWrites());
  if (def.body) {
    chain.use(utf8Body());
    // No body at all reads as `{}`: the schema then says what is missing, or accepts it when every field is optional.
    chain.before((request) => {
      request.event.body ||= '{}';
    });
    // The API speaks JSON only, so the body is parsed whatever the Content-Type says
    // (`disableContentTypeCheck` is in the middleware but missing from its typings).
    chain.use(httpJsonBodyParser({ disableContentTypeCheck: true } as Parameters<typeof httpJsonBodyParser>[0]));
  }
  return chain
    .use(validate(def))
    .use(idempotency())
    .handler(async (event, context) => {
      const replyOf = (result: unknown): APIGatewayProxyStructuredResultV2 => {
        if (result instanceof RawReply) return result.result;
        const status = def.status ?? 200;
        return status === 204
          ? { statusCode: 204 }
          : { statusCode: status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) };
      };
      const reply = async (): Promise<APIGatewayProxyStructuredResultV2> => {
        const input = context.input!;
        const result = await fn({
          params: input.params,
          query: input.query,
          body: input.body,
          caller: context.caller,
          headers: event.headers ?? {},
          rawBody: rawBodyOf(event),
          sourceIp: event.requestContext.http.sourceIp,
          audit: context.audit!,
        } as RequestOf<R, CallerOf<R['auth']>>);
        return replyOf(result);
      };
      if (!context.keyed) return reply();
      // A change made in one statement stores the reply it will answer with (shared/db/idempotency.ts claimInStatement).
      context.keyed.replyOf = (answer) => replyOf(answer) as StoredReply;
      return answerOnce(context.keyed, reply);
    }) as unknown as Handler;
}

/** The request's body as it arrived: the JSON parser keeps the text in rawBody; base64 bodies are decoded. */
function rawBodyOf(event: APIGatewayProxyEventV2): string {
  const raw = (event as { rawBody?: unknown }).rawBody ?? event.body;
  if (typeof raw !== 'string') return '';
  return event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
}
