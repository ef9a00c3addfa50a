import { appDb } from '#shared/db/client.ts';
import { connectAgent } from '#shared/live-query/connections.ts';
import { wsHandler } from '#shared/live-query/ws-handler.ts';

export const handler = wsHandler((event) => connectAgent(appDb(), event));
