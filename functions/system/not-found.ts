import { routes } from '#functions/routes.ts';
import { unmatchedRoute } from '#shared/http/unmatched-route.ts';

export const handler = unmatchedRoute(routes);
