import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { createScript } from '#shared/scripts/library.ts';

export const handler = httpHandler(routes['POST /api/v1/scripts'], ({ caller, body, audit }) =>
  createScript(appDb(), caller, body, audit),
);
