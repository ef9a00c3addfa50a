import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { deleteScript } from '#shared/scripts/library.ts';

export const handler = httpHandler(routes['DELETE /api/v1/scripts/{scriptId}'], ({ caller, params, audit }) =>
  deleteScript(appDb(), caller, params.scriptId, audit),
);
