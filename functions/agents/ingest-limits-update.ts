import { routes } from '#functions/routes.ts';
import { updateIngestLimits } from '#shared/agents/ingest-limits.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/orgs/organizations/{id}/ingest-limits'],
  ({ caller, params, body, audit }) => updateIngestLimits(appDb(), caller, params.id, body, audit),
);
