import { routes } from '#functions/routes.ts';
import { setFieldValues } from '#shared/custom-fields/bulk-values.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/custom-fields/{fieldId}/values'],
  ({ caller, params, body, audit }) => setFieldValues(appDb(), caller, params.fieldId, body, audit),
);
