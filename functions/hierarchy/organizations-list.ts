import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listOrganizations } from '#shared/hierarchy/organizations.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/orgs/organizations'], ({ caller, query }) =>
  listOrganizations(appDb(), caller, query),
);
