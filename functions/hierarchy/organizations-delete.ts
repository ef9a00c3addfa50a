import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { deleteOrganization } from '#shared/hierarchy/organizations.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['DELETE /api/v1/orgs/organizations/{id}'], ({ caller, params, audit }) =>
  deleteOrganization(appDb(), caller, params.id, audit),
);
