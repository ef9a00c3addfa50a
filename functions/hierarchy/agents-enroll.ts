import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { enrollAgent } from '#shared/hierarchy/enrollment.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/agents/enroll'], ({ body, audit }) =>
  enrollAgent(appDb(), body, audit),
);
