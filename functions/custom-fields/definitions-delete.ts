import { routes } from '#functions/routes.ts';
import { deleteDefinition } from '#shared/custom-fields/definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['DELETE /api/v1/custom-fields/{fieldId}'],
  ({ caller, params, query, audit }) => deleteDefinition(appDb(), caller, params.fieldId, query.force, audit),
);
