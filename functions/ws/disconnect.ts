import './channel.ts';
import { appDb } from '#shared/db/client.ts';
import { wsHandler } from '#shared/http/ws-handler.ts';
import { disconnectAgent } from '#shared/live-query/connections.ts';

export const handler = wsHandler((request) => disconnectAgent(appDb(), request.connectionId));
