/** A device is online while its agent was seen within this many minutes (filters, the viewer, device.online). */
export const onlineWindowMinutes = 5;

/**
 * How often the server wants an agent's heartbeat, told in every heartbeat reply (`heartbeatSeconds`). An agent with
 * a live WebSocket connection is online by that connection ($connect and $disconnect): its heartbeats carry news (its
 * version, status, boot time), so one every 15 minutes is enough. An agent without one is online by its heartbeats,
 * once a minute over HTTP. docs/agents.md "Presence and heartbeats".
 */
export const heartbeatSeconds = { connected: 900, http: 60 } as const;

/**
 * How long after its connection closed a device that has not connected again, nor heartbeated over HTTP, is told
 * offline: the online window, so that a reconnect within it (API Gateway ends every connection after two hours, a
 * network change drops it) neither goes offline nor comes online. `PRESENCE_GRACE_SECONDS` overrides it (the tests).
 */
export function presenceGraceSeconds(): number {
  const set = Number(process.env.PRESENCE_GRACE_SECONDS);
  return process.env.PRESENCE_GRACE_SECONDS && Number.isFinite(set) && set >= 0 ? set : onlineWindowMinutes * 60;
}

/**
 * The queue that carries heartbeats sent on agents' connections (HEARTBEAT_QUEUE_URL in AWS, whose worker receives
 * them in batches of many devices; unset, they run in this process, those arriving together in one batch).
 */
export const heartbeatQueueVariable = 'HEARTBEAT_QUEUE_URL';

/** The heartbeat queue's batches in AWS (infra/aws/work-queue.ts): up to `size` heartbeats gathered for `windowSeconds`. */
export const heartbeatBatch = { size: 100, windowSeconds: 5 } as const;
