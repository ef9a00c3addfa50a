import { onlineWindowMinutes } from '../agents/online.ts';
import type { AuditContext } from '../audit/writer.ts';
import { authenticateAgent } from '../auth/authenticate.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import { clientIp } from '../client-ip.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import { tellDeviceEvent } from '../queue/device-events.ts';
import { deleteConnection, postToConnection } from './agent-channel.ts';
import * as store from './store.ts';

/** An agent's WebSocket handshake: headers in lower case, the query string, the source IP as the gateway saw it. */
export interface AgentConnect {
  connectionId: string;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  sourceIp: string | undefined;
}

type ConnectHook = (db: Db, deviceId: string, connectionId: string) => Promise<void>;
const connectHooks: ConnectHook[] = [];

/**
 * Work that waits for an agent's connection (the script runs queued for its device), registered by the composition
 * layer (functions/ws): the channel knows no domain that uses it.
 */
export function whenAgentConnects(hook: ConnectHook): void {
  connectHooks.push(hook);
}

/**
 * $connect: the agent's bearer token (Authorization header, or a `token` query parameter for clients
 * that cannot set headers) names its device; the connection becomes the device's live connection.
 * A second connection of the same agent replaces the first, which is told so and closed.
 */
export async function connectAgent(db: Db, request: AgentConnect): Promise<void> {
  const { connectionId, query } = request;
  const headers = { ...request.headers };
  if (!headers.authorization && query.token) headers.authorization = `Bearer ${query.token}`;
  const agent = await authenticateAgent(db, headers);
  const { previousConnectionId } = await store.upsertConnection(db, {
    connectionId,
    agentId: agent.agentId,
    deviceId: agent.deviceId,
    orgId: agent.orgId,
    sourceIp: clientIp(headers, request.sourceIp),
  });
  if (previousConnectionId && previousConnectionId !== connectionId) await dropReplaced(previousConnectionId);
  // A device without a live connection, not seen within the online window, comes online: the event is named by when
  // it was last seen, as the heartbeat that brings it online names it, so the two tell it once.
  else if (!previousConnectionId) {
    const lastSeenAt = await store.selectOfflineSince(db, agent.deviceId, onlineWindowMinutes);
    if (lastSeenAt !== undefined)
      await tellDeviceEvent({
        event: 'device.online',
        eventId: `online:${agent.deviceId}:${lastSeenAt?.toISOString() ?? 'never'}`,
        deviceId: agent.deviceId,
      });
  }
  for (const hook of connectHooks) await hook(db, agent.deviceId, connectionId);
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

/** The agent speaking on a connection, as its $connect authenticated it, and the source IP it connected from. */
export async function agentOfConnection(
  db: Db,
  connectionId: string,
): Promise<{ agent: AgentPrincipal; sourceIp: string | null } | undefined> {
  const row = await store.selectConnectionAgent(db, connectionId);
  if (!row) return undefined;
  const { sourceIp, ...agent } = row;
  return { agent: { actorType: 'agent', ...agent }, sourceIp };
}

/** Who acts when an agent speaks on its connection (a heartbeat, an install's result): the agent, from its $connect's IP. */
export function connectionAudit(db: Db, speaker: { agent: AgentPrincipal; sourceIp: string | null }): AuditContext {
  return { db: unkeyedDb(db), caller: speaker.agent, ipAddress: speaker.sourceIp, userAgent: null, pending: [] };
}

/** $disconnect: forgets the connection (a newer one of the same device stays); the device went offline. */
export async function disconnectAgent(db: Db, connectionId: string): Promise<void> {
  const deviceId = await store.deleteConnectionRow(db, connectionId);
  if (deviceId) await tellDeviceEvent({ event: 'device.offline', eventId: `offline:${connectionId}`, deviceId });
}
