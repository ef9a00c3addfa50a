import { appDb } from '#shared/db/client.ts';
import { receiveAgentMessage } from '#shared/live-query/answers.ts';
import { messageText, wsHandler } from '#shared/live-query/ws-handler.ts';

export const handler = wsHandler((event) =>
  receiveAgentMessage(appDb(), event.requestContext.connectionId, messageText(event)),
);
