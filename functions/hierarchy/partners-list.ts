import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listPartners } from '#shared/hierarchy/partners.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/partners'], ({ caller, query }) =>
  listPartners(appDb(), caller, query),
);
