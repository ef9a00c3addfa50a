import type { Api, Reply } from './api.ts';

/** An enrolled agent as test/support/tenants.ts enrollDevice returns it. */
export interface Agent {
  agentId: string;
  deviceId: string;
  token: string;
}

/** A call of an agent route `/api/v1/agents/{agentId}{suffix}` with the agent's token (or another credential). */
export function agentCall<T = any>(
  api: Api,
  agent: Agent,
  method: string,
  suffix: '/heartbeat' | '/logs' | '/eventlogs',
  body?: unknown,
  options: { agentId?: string; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const token = options.token === null ? undefined : (options.token ?? agent.token);
  return api.request(method, `/api/v1/agents/${options.agentId ?? agent.agentId}${suffix}`, {
    token,
    body,
    headers: options.headers,
  });
}

export const submitLogs = (api: Api, agent: Agent, logs: unknown[], options?: Parameters<typeof agentCall>[5]) =>
  agentCall(api, agent, 'POST', '/logs', { logs }, options);

export const submitEvents = (api: Api, agent: Agent, events: unknown[], options?: Parameters<typeof agentCall>[5]) =>
  agentCall(api, agent, 'PUT', '/eventlogs', { events }, options);

/** A valid diagnostic log entry, `n` seconds before now unless the overrides say otherwise. */
export const logEntry = (n = 0, overrides: Record<string, unknown> = {}) => ({
  timestamp: new Date(Date.now() - n * 1000).toISOString(),
  level: 'info',
  component: 'heartbeat',
  message: `Checked in (${n})`,
  fields: { attempt: n },
  agentVersion: '2.4.1',
  ...overrides,
});

/** A valid device event with a unique eventId unless the overrides say otherwise. */
export const deviceEvent = (n = 0, overrides: Record<string, unknown> = {}) => ({
  timestamp: new Date(Date.now() - n * 1000).toISOString(),
  level: 'warning',
  category: 'security',
  source: 'Microsoft-Windows-Security-Auditing',
  eventId: `record-${n}`,
  message: `An account failed to log on (${n})`,
  details: { logonType: 3 },
  ...overrides,
});
