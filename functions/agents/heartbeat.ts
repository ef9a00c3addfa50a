import { routes } from '#functions/routes.ts';
import { heartbeat } from '#shared/agents/heartbeat.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/agents/{id}/heartbeat'], ({ caller, params, body, audit }) =>
  heartbeat(appDb(), caller, params.id, body, audit),
);
