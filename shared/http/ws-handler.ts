import type {
  APIGatewayEventWebsocketRequestContextV2,
  APIGatewayProxyResultV2,
  APIGatewayProxyWebsocketEventV2,
  Context,
} from 'aws-lambda';
import { toErrorReply } from './error-envelope.ts';

/**
 * An API Gateway WebSocket event as the Lambda receives it. $connect carries the handshake's headers
 * (their case as the client sent them) and query string; $disconnect its close code.
 */
export interface WebSocketEvent extends APIGatewayProxyWebsocketEventV2 {
  headers?: Record<string, string | undefined>;
  requestContext: APIGatewayEventWebsocketRequestContextV2 & {
    identity?: { sourceIp?: string; userAgent?: string };
    disconnectStatusCode?: number;
    disconnectReason?: string;
  };
}

export type WebSocketHandler = (event: WebSocketEvent, context: Context) => Promise<APIGatewayProxyResultV2>;

/** What a WebSocket route's domain call reads of its event: headers in lower case, as the HTTP side reads them. */
export interface WebSocketRequest {
  connectionId: string;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  /** The connection's source IP as API Gateway reports it. */
  sourceIp: string | undefined;
  /** The text of a $default message (binary frames arrive base64-encoded). */
  body: string;
}

/**
 * A WebSocket route's Lambda handler: the one domain call, 200 when it returns, else the error
 * envelope's status (a $connect answered 401 refuses the handshake).
 */
export function wsHandler(fn: (request: WebSocketRequest) => Promise<void>): WebSocketHandler {
  return async (event) => {
    try {
      await fn({
        connectionId: event.requestContext.connectionId,
        headers: Object.fromEntries(
          Object.entries(event.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
        ),
        query: event.queryStringParameters ?? {},
        sourceIp: event.requestContext.identity?.sourceIp,
        body: event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64').toString('utf8') : (event.body ?? ''),
      });
      return { statusCode: 200 };
    } catch (error) {
      return toErrorReply(error);
    }
  };
}
