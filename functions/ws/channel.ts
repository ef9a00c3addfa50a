import { receiveMessagesNaming } from '#shared/live-query/answers.ts';
import { whenAgentConnects } from '#shared/live-query/connections.ts';
import { receiveRunMessage } from '#shared/scripts/answers.ts';
import { scheduleConnectDelivery } from '#shared/scripts/dispatch.ts';

/**
 * The agent channel's users, registered where the WebSocket routes are composed: script runs wait for an agent's
 * connection and answer on it. Imported by each WebSocket handler before it serves a message.
 */
whenAgentConnects(scheduleConnectDelivery);
receiveMessagesNaming('runItemId', receiveRunMessage);
