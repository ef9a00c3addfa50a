import { routes } from '#functions/routes.ts';
import { getIngestLimits } from '#shared/agents/ingest-limits.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/orgs/organizations/{id}/ingest-limits'], ({ caller, params }) =>
  getIngestLimits(appDb(), caller, params.id),
);
