import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { uploadPosture } from '#shared/posture/snapshot.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/agents/{id}/management-posture'],
  ({ caller, params, body, audit }) => uploadPosture(appDb(), caller, params.id, body, audit),
);
