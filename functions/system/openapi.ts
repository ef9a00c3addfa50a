import { routes } from '#functions/routes.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { buildOpenApi } from '#shared/http/openapi.ts';

let document: ReturnType<typeof buildOpenApi> | undefined;

export const handler = httpHandler(routes['GET /api/v1/openapi.json'], async () => {
  document ??= buildOpenApi(routes, { title: 'Logbook API', version: '1' });
  return document;
});
