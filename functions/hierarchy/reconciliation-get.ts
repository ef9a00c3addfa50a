import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { reconciliationProgress } from '#shared/reconciliation/reconcile.ts';

export const handler = httpHandler(routes['GET /api/v1/orgs/organizations/{id}/reconciliation'], ({ caller, params }) =>
  reconciliationProgress(appDb(), caller, params.id),
);
