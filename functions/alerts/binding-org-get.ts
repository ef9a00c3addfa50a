import { routes } from '#functions/routes.ts';
import { getOrgBinding } from '#shared/alerts/bindings.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/orgs/organizations/{id}/alert-binding'], ({ caller, params }) =>
  getOrgBinding(appDb(), caller, params.id),
);
