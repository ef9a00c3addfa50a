import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { createEnrollmentKey } from '#shared/hierarchy/enrollment.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/enrollment-keys'],
  ({ caller, params, body }) => createEnrollmentKey(appDb(), caller, params.id, body),
);
