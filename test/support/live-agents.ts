import WebSocket from 'ws';
import { type RunningAgent, startAgent } from '#demo/agent/agent.ts';
import { type EventStore, generateEventStore } from '#demo/agent/event-store.ts';
import type { Agent } from './agents.ts';
import type { Api } from './api.ts';

/** A message the service sent to an agent. */
export type ServiceMessage = Record<string, any> & { type: string; requestId?: string };

/**
 * An agent's WebSocket connection driven by the test: it sees each query the service relays and
 * answers (or does not) as the test says, over a real connection to the local WebSocket gateway.
 */
export class TestConnection {
  private readonly inbox: ServiceMessage[] = [];
  private readonly waiting: ((message: ServiceMessage) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as ServiceMessage;
      const waiter = this.waiting.shift();
      if (waiter) waiter(message);
      else this.inbox.push(message);
    });
    this.closed = new Promise((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  /**
   * Connects with the agent's token in the Authorization header (or, `via: 'query'`, as ?token=).
   * Rejects with the HTTP status when the handshake is refused. `headers` go with the handshake (a proxy's
   * x-forwarded-for).
   */
  static open(
    api: Api,
    token: string | undefined,
    via: 'header' | 'query' = 'header',
    headers: Record<string, string> = {},
  ): Promise<TestConnection> {
    const url = via === 'query' && token ? `${api.wsUrl}/?token=${encodeURIComponent(token)}` : api.wsUrl;
    const socket = new WebSocket(url, {
      headers: { ...headers, ...(via === 'header' && token ? { authorization: `Bearer ${token}` } : {}) },
    });
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new TestConnection(socket)));
      socket.once('unexpected-response', (_request, response) => {
        reject(Object.assign(new Error(`handshake refused: ${response.statusCode}`), { status: response.statusCode }));
        socket.terminate();
      });
      socket.once('error', reject);
    });
  }

  /** The next message the service sends; the test's timeout bounds the wait. */
  next(): Promise<ServiceMessage> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Messages received and not yet taken. */
  pending(): ServiceMessage[] {
    return [...this.inbox];
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  close(): Promise<{ code: number; reason: string }> {
    this.socket.close(1000);
    return this.closed;
  }
}

/** The simulated agent (demo/agent) for an enrolled test agent, connected and answering from its own event store. */
export async function startSimulatedAgent(
  api: Api,
  agent: Agent,
  computer = 'WIN-TEST01',
): Promise<RunningAgent & { store: EventStore }> {
  const store = generateEventStore({ computer, anchor: new Date('2026-03-01T12:00:00Z') });
  const running = startAgent({
    server: api.url,
    wsUrl: api.wsUrl,
    agentId: agent.agentId,
    token: agent.token,
    store,
    submitEvents: false,
    heartbeatSeconds: 3600,
  });
  await running.connected();
  return { ...running, store };
}

/**
 * Until `check` holds, polled every 20 ms. Bounded by the test's own timeout, not by a guess of how long the event
 * takes on a loaded machine; `ms` bounds it tighter where the time itself is what the test checks.
 */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  ms = Number.POSITIVE_INFINITY,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
