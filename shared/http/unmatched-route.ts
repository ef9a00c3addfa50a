import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { errorReply } from './error-envelope.ts';

/** Whether a path of the route table (`/api/v1/devices/{id}`) matches a request path: `{name}` takes one segment. */
function matches(template: string, rawPath: string): boolean {
  const want = template.split('/');
  const got = rawPath.split('/');
  return (
    want.length === got.length && want.every((part, i) => (/^\{.+\}$/.test(part) ? got[i] !== '' : part === got[i]))
  );
}

/**
 * The answer to a request no route takes (API Gateway's $default route, the local gateway's fallback): 405 with
 * Allow when the path has routes under other methods (HEAD included: no route takes it), else 404; both in the
 * error envelope.
 */
export function unmatchedRoute(routes: Record<string, unknown>) {
  const table = Object.keys(routes).map((key) => key.split(' ') as [string, string]);
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> => {
    const { method } = event.requestContext.http;
    const allowed = table.filter(([, path]) => matches(path, event.rawPath)).map(([verb]) => verb);
    if (allowed.length === 0) return errorReply(404, 'NOT_FOUND', `No route ${method} ${event.rawPath}`);
    const reply = errorReply(
      405,
      'METHOD_NOT_ALLOWED',
      `${method} is not allowed on ${event.rawPath}; allowed: ${allowed.join(', ')}`,
    );
    return { ...reply, headers: { ...reply.headers, allow: allowed.join(', ') } };
  };
}
