import type {
  APIGatewayEventWebsocketRequestContextV2,
  APIGatewayProxyResultV2,
  APIGatewayProxyWebsocketEventV2,
  Context,
} from 'aws-lambda';
import { toErrorReply } from '../http/error-envelope.ts';

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

/**
 * A WebSocket route's Lambda handler: the one domain call, 200 when it returns, else the error
 * envelope's status (a $connect answered 401 refuses the handshake).
 */
export function wsHandler(fn: (event: WebSocketEvent) => Promise<void>): WebSocketHandler {
  return async (event) => {
    try {
      await fn(event);
      return { statusCode: 200 };
    } catch (error) {
      return toErrorReply(error);
    }
  };
}

/** Header names in lower case, as the HTTP side reads them. */
export function lowerCaseHeaders(headers: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

/** The text of a $default message (binary frames arrive base64-encoded). */
export function messageText(event: WebSocketEvent): string {
  return event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64').toString('utf8') : (event.body ?? '');
}
