import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { uploadReconciliation } from '#shared/reconciliation/reconcile.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/reconciliation'],
  ({ caller, params, body, audit }) => uploadReconciliation(appDb(), caller, params.id, body, audit),
);
