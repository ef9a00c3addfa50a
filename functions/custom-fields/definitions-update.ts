import { routes } from '#functions/routes.ts';
import { updateDefinition } from '#shared/custom-fields/definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['PATCH /api/v1/custom-fields/{fieldId}'], ({ caller, params, body, audit }) =>
  updateDefinition(appDb(), caller, params.fieldId, body, audit),
);
