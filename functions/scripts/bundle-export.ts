import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { exportBundle } from '#shared/scripts/bundle.ts';

export const handler = httpHandler(routes['GET /api/v1/scripts/bundle/export'], ({ caller, query }) =>
  exportBundle(appDb(), caller, query.ids),
);
