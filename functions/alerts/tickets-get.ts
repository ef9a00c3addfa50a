import { routes } from '#functions/routes.ts';
import { getTicket } from '#shared/alerts/tickets.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/tickets/{ticketId}'], ({ caller, params }) =>
  getTicket(appDb(), caller, params.ticketId),
);
