import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { revokeEnrollmentKey } from '#shared/hierarchy/enrollment.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['DELETE /api/v1/orgs/organizations/{id}/enrollment-keys/{keyId}'],
  ({ caller, params }) => revokeEnrollmentKey(appDb(), caller, params.id, params.keyId),
);
