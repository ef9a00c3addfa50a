import { routes } from '#functions/routes.ts';
import { createDefinition } from '#shared/custom-fields/definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/custom-fields'], ({ caller, body, audit }) =>
  createDefinition(appDb(), caller, body, audit),
);
