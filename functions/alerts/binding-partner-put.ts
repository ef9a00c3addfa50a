import { routes } from '#functions/routes.ts';
import { putPartnerBinding } from '#shared/alerts/bindings.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/partners/{partnerId}/alert-binding'],
  ({ caller, params, body, audit }) => putPartnerBinding(appDb(), caller, params.partnerId, body, audit),
);
