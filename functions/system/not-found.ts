import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { unmatchedRoute } from '#shared/http/unmatched-route.ts';
import { routeTable } from './route-table.ts';

let answer: ReturnType<typeof unmatchedRoute> | undefined;

/** API Gateway's $default route: 404, or 405 with Allow for a path that other methods take. */
export const handler = (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> => {
  answer ??= unmatchedRoute(Object.fromEntries(routeTable().keys.map((key) => [key, true])));
  return answer(event);
};
