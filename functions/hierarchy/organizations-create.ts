import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { createOrganization } from '#shared/hierarchy/organizations.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/orgs/organizations'], ({ caller, body }) =>
  createOrganization(appDb(), caller, body),
);
