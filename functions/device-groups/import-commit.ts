import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { commitGroupImport } from '#shared/device-groups/import.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/device-groups/import'],
  ({ caller, params, body, audit }) => commitGroupImport(appDb(), caller, params.id, body, audit),
);
