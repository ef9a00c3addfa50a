import { routes } from '#functions/routes.ts';
import { putOrgBinding } from '#shared/alerts/bindings.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/orgs/organizations/{id}/alert-binding'],
  ({ caller, params, body, audit }) => putOrgBinding(appDb(), caller, params.id, body, audit),
);
