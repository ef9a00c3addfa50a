import { routes } from '#functions/routes.ts';
import { listTickets } from '#shared/alerts/tickets.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/tickets'], ({ caller, query }) =>
  listTickets(appDb(), caller, query),
);
