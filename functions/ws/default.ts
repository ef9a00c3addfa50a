import './channel.ts';
import { appDb } from '#shared/db/client.ts';
import { wsHandler } from '#shared/http/ws-handler.ts';
import { receiveAgentMessage } from '#shared/live-query/answers.ts';

export const handler = wsHandler((request) => receiveAgentMessage(appDb(), request.connectionId, request.body));
