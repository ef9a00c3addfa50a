import type { buildOpenApi } from '#shared/http/openapi.ts';

/** Every route key and the OpenAPI document (its `servers` left to the origin serving it). */
export interface RouteTable {
  keys: readonly string[];
  document: () => ReturnType<typeof buildOpenApi>;
}

let table: RouteTable | undefined;

/**
 * The route table as data, for the routes describing the API (its OpenAPI document, the 404/405 answer). Whoever
 * composes the table provides it (functions/routes.ts in this process; in AWS, the entry of the Lambda whose routes
 * hold the `route-table` grant, from what the stack computed), so that this Lambda bundles no domain's code.
 */
export function provideRouteTable(provided: RouteTable): void {
  table = provided;
}

export function routeTable(): RouteTable {
  if (!table) throw new Error('No route table provided: functions/routes.ts provides it when it composes the table');
  return table;
}
