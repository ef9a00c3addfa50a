import { authenticateAgent } from '../auth/authenticate.ts';
import type { Db } from '../db/db.ts';
import { clientIp } from '../http/client-ip.ts';
import { logger } from '../logger.ts';
import { scheduleConnectDelivery } from '../scripts/dispatch.ts';
import { deleteConnection, postToConnection } from './agent-channel.ts';
import * as store from './store.ts';
import { lowerCaseHeaders, type WebSocketEvent } from './ws-handler.ts';

/**
 * $connect: the agent's bearer token (Authorization header, or a `token` query parameter for clients
 * that cannot set headers) names its device; the connection becomes the device's live connection.
 * A second connection of the same agent replaces the first, which is told so and closed.
 */
export async function connectAgent(db: Db, event: WebSocketEvent): Promise<void> {
  const headers = lowerCaseHeaders(event.headers);
  const token = event.queryStringParameters?.token;
  if (!headers.authorization && token) headers.authorization = `Bearer ${token}`;
  const agent = await authenticateAgent(db, headers);
  const { connectionId } = event.requestContext;
  const { previousConnectionId } = await store.upsertConnection(db, {
    connectionId,
    agentId: agent.agentId,
    deviceId: agent.deviceId,
    orgId: agent.orgId,
    sourceIp: clientIp(headers, event.requestContext.identity?.sourceIp),
  });
  if (previousConnectionId && previousConnectionId !== connectionId) await dropReplaced(previousConnectionId);
  await scheduleConnectDelivery(db, agent.deviceId, connectionId);
}

/** Best effort: the replaced connection may be gone already; the new one stands either way. */
async function dropReplaced(connectionId: string): Promise<void> {
  try {
    if ((await postToConnection(connectionId, { type: 'connection.replaced' })) === 'sent')
      await deleteConnection(connectionId);
  } catch (error) {
    logger.warn('Could not close a replaced agent connection', { connectionId, error: String(error) });
  }
}

/** $disconnect: forgets the connection (a newer one of the same device stays). */
export function disconnectAgent(db: Db, event: WebSocketEvent): Promise<void> {
  return store.deleteConnection(db, event.requestContext.connectionId);
}
