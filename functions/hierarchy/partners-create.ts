import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { createPartner } from '#shared/hierarchy/partners.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/partners'], ({ caller, body }) =>
  createPartner(appDb(), caller, body),
);
