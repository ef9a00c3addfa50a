import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { updateScript } from '#shared/scripts/library.ts';

export const handler = httpHandler(routes['PATCH /api/v1/scripts/{scriptId}'], ({ caller, params, body, audit }) =>
  updateScript(appDb(), caller, params.scriptId, body, audit),
);
