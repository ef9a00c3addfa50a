import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { updateOrganization } from '#shared/hierarchy/organizations.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['PATCH /api/v1/orgs/organizations/{id}'], ({ caller, params, body, audit }) =>
  updateOrganization(appDb(), caller, params.id, body, audit),
);
