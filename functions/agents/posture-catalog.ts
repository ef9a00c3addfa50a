import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { postureCatalogFor } from '#shared/posture/snapshot.ts';

export const handler = httpHandler(routes['GET /api/v1/agents/{id}/posture-catalog'], ({ caller, params }) =>
  postureCatalogFor(appDb(), caller, params.id),
);
