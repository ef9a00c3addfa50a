import { heartbeat } from '../agents/heartbeat.ts';
import { presenceGraceSeconds } from '../agents/online.ts';
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import { authenticateAgent } from '../auth/authenticate.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import { clientIp } from '../client-ip.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import { tellDeviceEvent } from '../queue/device-events.ts';
import { enqueue } from '../queue/work-queue.ts';
import { deleteConnection, postToConnection } from './agent-channel.ts';
import * as store from './store.ts';

/** An agent's WebSocket handshake: headers in lower case, the query string, the source IP as the gateway saw it. */
export interface AgentConnect {
  connectionId: string;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  sourceIp: string | undefined;
}

/**
 * Work that waits for an agent's connection: `read`, an SQL expression over :deviceId (what waits for the device), is
 * read by the statement that records the connection; `run` gets its value.
 */
interface ConnectHook<T> {
  read: string;
  run: (db: Db, deviceId: string, connectionId: string, found: T) => Promise<void>;
}
const connectHooks: ConnectHook<never>[] = [];
type DisconnectHook = (db: Db, deviceId: string, orgId: string) => Promise<void>;
const disconnectHooks: DisconnectHook[] = [];

/**
 * Work that waits for an agent's connection (the script runs queued for its device), registered by the composition
 * layer (functions/ws): the channel knows no domain that uses it.
 */
export function whenAgentConnects<T>(hook: ConnectHook<T>): void {
  connectHooks.push(hook as ConnectHook<never>);
}

/** Work armed when a device's connection closed and no newer one stands (its offline monitors), registered likewise. */
export function whenAgentDisconnects(hook: DisconnectHook): void {
  disconnectHooks.push(hook);
}

/**
 * $connect: the agent's bearer token (Authorization header, or a `token` query parameter for clients
 * that cannot set headers) names its device; the connection becomes the device's live connection, and the device is
 * online while it stands. The connection is recorded as a heartbeat with nothing to report, from the connection's
 * source IP: last seen now, a new IP kept and audited (agent.source.ip.changed), device.online told when the device
 * had no connection and was not seen within the online window.
 * A second connection of the same agent replaces the first, which is told so and closed.
 */
export async function connectAgent(db: Db, request: AgentConnect): Promise<void> {
  const { connectionId, query } = request;
  const headers = { ...request.headers };
  if (!headers.authorization && query.token) headers.authorization = `Bearer ${query.token}`;
  const agent = await authenticateAgent(db, headers);
  const sourceIp = clientIp(headers, request.sourceIp);
  const audit = connectionAudit(db, { agent, sourceIp });
  try {
    await heartbeat(db, agent, agent.agentId, {}, audit);
  } finally {
    await flushAudit(audit);
  }
  const { previousConnectionId, found } = await store.upsertConnection(
    db,
    { connectionId, agentId: agent.agentId, deviceId: agent.deviceId, orgId: agent.orgId, sourceIp },
    connectHooks.map((hook) => hook.read),
  );
  if (previousConnectionId && previousConnectionId !== connectionId) await dropReplaced(previousConnectionId);
  for (const [n, hook] of connectHooks.entries()) await hook.run(db, agent.deviceId, connectionId, found[n] as never);
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

/** The job judging, once the grace is over, whether a device whose connection closed is offline. */
export const presenceJobKind = 'presence.offline';
export type PresenceJob = { kind: typeof presenceJobKind; deviceId: string; connectionId: string; closedAt: string };

/**
 * $disconnect: forgets the connection (a newer one of the same device stays, and nothing else happens). The device
 * was seen until now (last seen advances); device.offline is not told yet: a job armed for the grace
 * (presenceGraceSeconds) tells it unless the device connected again or heartbeated over HTTP meanwhile, so a
 * reconnect within the grace does not flap. The disconnect hooks arm what else waits for silence (offline monitors).
 */
export async function disconnectAgent(db: Db, connectionId: string): Promise<void> {
  const closed = await store.deleteConnectionRow(db, connectionId);
  if (!closed) return;
  const job: PresenceJob = {
    kind: presenceJobKind,
    deviceId: closed.deviceId,
    connectionId,
    closedAt: closed.lastSeenAt.toISOString(),
  };
  await enqueue(job, presenceGraceSeconds());
  for (const hook of disconnectHooks) await hook(db, closed.deviceId, closed.orgId);
}

/**
 * The grace after a connection closed is over: the device is told offline (once per connection) unless it has a live
 * connection again or was seen since (an HTTP heartbeat), or is gone.
 */
export async function runPresenceJob(db: Db, job: PresenceJob): Promise<void> {
  if (!(await store.selectSilentSince(db, job.deviceId, job.closedAt))) return;
  await tellDeviceEvent({ event: 'device.offline', eventId: `offline:${job.connectionId}`, deviceId: job.deviceId });
}
