import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { commitTreeImport } from '#shared/tenancy-import/import.ts';

export const handler = httpHandler(routes['POST /api/v1/orgs/import'], ({ caller, body, audit }) =>
  commitTreeImport(appDb(), caller, body, audit),
);
