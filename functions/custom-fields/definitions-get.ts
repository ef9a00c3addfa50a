import { routes } from '#functions/routes.ts';
import { getDefinition } from '#shared/custom-fields/definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/custom-fields/{fieldId}'], ({ caller, params }) =>
  getDefinition(appDb(), caller, params.fieldId),
);
