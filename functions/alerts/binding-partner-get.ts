import { routes } from '#functions/routes.ts';
import { getPartnerBinding } from '#shared/alerts/bindings.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/partners/{partnerId}/alert-binding'], ({ caller, params }) =>
  getPartnerBinding(appDb(), caller, params.partnerId),
);
