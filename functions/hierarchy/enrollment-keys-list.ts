import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listEnrollmentKeys } from '#shared/hierarchy/enrollment.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['GET /api/v1/orgs/organizations/{id}/enrollment-keys'],
  ({ caller, params, query }) => listEnrollmentKeys(appDb(), caller, params.id, query),
);
