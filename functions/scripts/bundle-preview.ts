import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { previewBundle } from '#shared/scripts/bundle.ts';

export const handler = httpHandler(routes['POST /api/v1/scripts/bundle/preview'], ({ caller, body }) =>
  previewBundle(appDb(), caller, body),
);
