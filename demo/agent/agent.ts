/**
 * The simulated agent: what a Windows device's agent does towards Logbook. It heartbeats (on its WebSocket connection
 * while that is open, else over HTTP), posts its
 * diagnostic logs, submits its stored event logs once, and keeps a WebSocket connection (reconnecting
 * with exponential backoff) on which it answers live event-log queries from its generated event
 * store, in chunks when an answer exceeds about 100 KB (docs/live-query.md).
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { AgentMessage, AgentQuery, LiveEventFilter } from '#shared/live-query/protocol.ts';
import { answerFrames } from './answer-frames.ts';
import type { EventStore, LiveEvent } from './event-store.ts';
import { simulatedSerial } from './identity.ts';
import { type Machine, monitoring } from './monitoring.ts';
import { type PatchBehaviour, patchInstaller } from './patch-installer.ts';
import { scriptRunner } from './script-runner.ts';

export interface AgentOptions {
  /** The HTTP API's base, e.g. http://localhost:3000 */
  server: string;
  /** The WebSocket API, e.g. ws://localhost:3001 */
  wsUrl: string;
  agentId: string;
  token: string;
  store: EventStore;
  agentVersion?: string;
  /**
   * Heartbeat this often whatever the server says (demos, tests); without it the agent follows the `heartbeatSeconds`
   * of each heartbeat's reply (900 s on its connection, 60 s over HTTP), 60 s until the first reply.
   */
  heartbeatSeconds?: number;
  /**
   * A keep-alive message once the connection was quiet this long (default 540): API Gateway closes a connection idle
   * for 10 minutes.
   */
  pingSeconds?: number;
  /** Whether to submit the store's warnings and errors as stored event logs at start (PUT /agents/{id}/eventlogs). */
  submitEvents?: boolean;
  /**
   * After another connection of this agent replaced ours, the agent stays off the channel; with this, it comes
   * back once the check says so twice in a row, `resumeCheckMs` apart (npm start: the demo device has no connection any more).
   */
  mayResume?: () => Promise<boolean>;
  resumeCheckMs?: number;
  log?: (line: string) => void;
  /**
   * The device's management-posture snapshot, uploaded at start and every `postureEvery` heartbeats (default 96: daily
   * at 900 s); none: never scans.
   */
  posture?: () => object;
  postureEvery?: number;
  /** What the machine measures for monitoring (docs/monitoring.md); none: the agent sends no metrics or checks. */
  machine?: Machine;
  /** workstation or server, reported with each heartbeat. */
  role?: 'workstation' | 'server';
  /** How patch.install is answered (default: every patch installed); the OS updater is reported suppressed. */
  patching?: PatchBehaviour;
}

export interface RunningAgent {
  /** Resolves once the WebSocket connection is open (again). */
  connected(): Promise<void>;
  /** Heartbeats now (and reports metrics and checks after it), as the interval does. */
  checkIn(): Promise<void>;
  stop(): Promise<void>;
}

/** API Gateway takes WebSocket frames of at most 32 KB: a message is sent in fragments of this size. */
const frameBytes = 32 * 1024;
const maxBackoffMs = 60_000;

export function startAgent(options: AgentOptions): RunningAgent {
  const log = options.log ?? (() => undefined);
  const agentVersion = options.agentVersion ?? '2.4.1-sim';
  const authorization = { authorization: `Bearer ${options.token}` };
  const diagnostics: object[] = [];
  // Kept until the next heartbeat posts them; while the server is unreachable, the oldest go first.
  const diagnostic = (
    level: 'debug' | 'info' | 'warn' | 'error',
    component: string,
    message: string,
    fields?: Record<string, unknown>,
  ) => {
    diagnostics.push({ timestamp: new Date().toISOString(), level, component, message, fields, agentVersion });
    if (diagnostics.length > 5_000) diagnostics.shift();
  };

  let stopped = false;
  let replaced = false;
  let resume: NodeJS.Timeout | undefined;
  let socket: WebSocket | undefined;
  let backoffMs = 1_000;
  let reconnect: NodeJS.Timeout | undefined;
  let ping: NodeJS.Timeout | undefined;
  let waiters: (() => void)[] = [];
  const scripts = scriptRunner(options.store.computer);
  let bootedAt = new Date();
  // A reboot after installs: the device is back at once and heartbeats with its new boot time.
  const patches = patchInstaller(options.patching ?? {}, () => {
    bootedAt = new Date();
    void checkIn();
  });

  // The work under way (calls, check-ins): stopping waits for it, so an agent stopped leaves no request behind it.
  const underWay = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    underWay.add(work);
    void work.then(
      () => underWay.delete(work),
      () => underWay.delete(work),
    );
    return work;
  };
  const call = (method: string, suffix: string, body: unknown, headers: Record<string, string> = {}) =>
    track(send(method, suffix, body, headers));
  const send = async (method: string, suffix: string, body: unknown, headers: Record<string, string>) => {
    const reply = await fetch(`${options.server}/api/v1/agents/${options.agentId}${suffix}`, {
      method,
      headers: { ...authorization, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await reply.text();
    if (!reply.ok) throw new Error(`${method} ${suffix}: ${reply.status} ${text}`);
    return text ? (JSON.parse(text) as unknown) : undefined;
  };
  const monitor = options.machine
    ? monitoring(options.machine, (method, suffix, body) => call(method, suffix, body), log)
    : undefined;

  // The upload in flight keeps its Idempotency-Key until acknowledged: a resend after a timeout or a 503 stores
  // nothing twice.
  let upload: { key: string; logs: object[] } | undefined;
  const uploadLogs = async () => {
    if (!upload && diagnostics.length > 0) upload = { key: randomUUID(), logs: diagnostics.splice(0, 500) };
    if (!upload) return;
    await call('POST', '/logs', { logs: upload.logs }, { 'idempotency-key': upload.key });
    upload = undefined;
  };

  // The heartbeat sent on the connection, waiting for its heartbeat.ack (or error).
  let acked: ((reply: Record<string, unknown>) => void) | undefined;
  const beatOnSocket = (ws: WebSocket, body: object) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        acked = undefined;
        reject(new Error('no heartbeat.ack within 10 s'));
      }, 10_000);
      acked = (reply) => {
        clearTimeout(timer);
        acked = undefined;
        if (reply.type === 'heartbeat.ack') resolve(reply);
        else reject(new Error(`heartbeat refused: ${JSON.stringify(reply.error)}`));
      };
      sendMessage(ws, JSON.stringify({ type: 'heartbeat', ...body }));
    });
  // On the open connection (no API Gateway request nor Lambda of its own per beat); over HTTP without one, or when the
  // connection does not answer.
  const sendHeartbeat = async (body: object) => {
    const ws = socket;
    if (ws?.readyState === WebSocket.OPEN && !acked) {
      try {
        return await beatOnSocket(ws, body);
      } catch (error) {
        log(`heartbeat on the connection failed, sending it over HTTP: ${String(error)}`);
      }
    }
    return call('POST', '/heartbeat', body);
  };

  let beats = 0;
  // When the next heartbeat is due: the option, or what the last reply asked for.
  let nextBeatSeconds = options.heartbeatSeconds ?? 60;
  const checkInOnce = async () => {
    try {
      const beat = (await sendHeartbeat({
        agentVersion,
        status: 'online',
        serialNumber: simulatedSerial(options.store.computer),
        ...(options.role ? { role: options.role } : {}),
        lastBootAt: bootedAt.toISOString(),
        rebootPending: false,
        osUpdaterSuppressed: true,
      })) as { configVersion?: string; heartbeatSeconds?: number };
      if (!options.heartbeatSeconds && Number(beat.heartbeatSeconds) > 0)
        nextBeatSeconds = Number(beat.heartbeatSeconds);
      await monitor?.report(beat.configVersion);
      if (options.posture && beats++ % (options.postureEvery ?? 96) === 0)
        await call('PUT', '/management-posture', options.posture());
      await uploadLogs();
    } catch (error) {
      if (!stopped) log(`heartbeat failed: ${String(error)}`);
    }
  };
  const checkIn = () => track(checkInOnce());

  const connect = () => {
    if (stopped) return;
    const ws = new WebSocket(options.wsUrl, { headers: authorization });
    socket = ws;
    ws.on('open', () => {
      backoffMs = 1_000;
      log('connected for live queries');
      diagnostic('info', 'ws', 'Connected for live queries');
      for (const resolve of waiters.splice(0)) resolve();
      const quietMs = (options.pingSeconds ?? 540) * 1000;
      ping = setInterval(
        () => {
          if (Date.now() - lastSentAt >= quietMs * 0.9) sendMessage(ws, JSON.stringify({ type: 'ping' }));
        },
        Math.max(1_000, quietMs / 3),
      );
    });
    ws.on('unexpected-response', (_request, response) => {
      log(
        `live-query connection refused: ${response.statusCode}${response.statusCode === 401 ? ' (token invalid or revoked)' : ''}`,
      );
      ws.terminate();
    });
    ws.on('message', (data) => {
      const message = parse(data.toString());
      if (message?.type === 'connection.replaced') {
        // Another process runs with this agent's identity and took over the connection: two agents fighting over
        // it would replace each other forever, so this one stays off the channel (until mayResume says otherwise).
        log(
          `another connection of this agent took over the live-query channel; not reconnecting${options.mayResume ? ' while it is there' : ''}`,
        );
        diagnostic('warn', 'ws', 'Replaced by another connection of this agent; live queries go there');
        replaced = true;
        if (options.mayResume) watchForResume(options.mayResume);
        return;
      }
      if (
        (message?.type === 'heartbeat.ack' || (message?.type === 'error' && message.inReplyTo === 'heartbeat')) &&
        acked
      )
        return acked(message);
      if (message?.type === 'script.run') return scripts.receive(message, (text) => sendMessage(ws, text));
      if (message?.type === 'patch.install') return patches.receive(message, (text) => sendMessage(ws, text));
      if (typeof message?.requestId === 'string' && typeof message.type === 'string') {
        const started = performance.now();
        const reply = answer(options.store, message as AgentQuery & { requestId: string });
        for (const frame of answerFrames(reply)) sendMessage(ws, frame);
        diagnostic('debug', 'live-query', `Answered ${message.type}`, {
          requestId: message.requestId,
          ms: Math.round(performance.now() - started),
        });
      }
    });
    let failure = '';
    ws.on('error', (error) => {
      failure = `: ${error.message}`;
    });
    ws.on('close', (code) => {
      clearInterval(ping);
      if (stopped || replaced) return;
      const delay = Math.round(backoffMs * (0.8 + Math.random() * 0.4));
      log(
        `live-query connection to ${options.wsUrl} closed (${code}${failure}); reconnecting in ${(delay / 1000).toFixed(1)} s`,
      );
      diagnostic('warn', 'ws', `Connection closed (${code}); reconnecting`, { delayMs: delay });
      backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
      reconnect = setTimeout(connect, delay);
    });
  };

  const watchForResume = (mayResume: () => Promise<boolean>) => {
    let streak = 0;
    const check = async () => {
      if (stopped) return;
      streak = (await mayResume().catch(() => false)) ? streak + 1 : 0;
      if (streak < 2) {
        resume = setTimeout(() => void check(), options.resumeCheckMs ?? 5_000);
        return;
      }
      replaced = false;
      log('the other connection is gone; taking the live-query channel back');
      connect();
    };
    resume = setTimeout(() => void check(), options.resumeCheckMs ?? 5_000);
  };

  diagnostic('info', 'service', 'Agent started', { hostname: options.store.computer });
  // Each check-in arms the next one, at the interval the server asked for in its last reply.
  let heartbeat: NodeJS.Timeout | undefined;
  const beatLoop = () =>
    void checkIn().then(() => {
      if (!stopped) heartbeat = setTimeout(beatLoop, nextBeatSeconds * 1000);
    });
  beatLoop();
  if (options.submitEvents ?? true) {
    void call('PUT', '/eventlogs', { events: storedEvents(options.store.all()) }).catch((error: unknown) =>
      log(`event log submission failed: ${String(error)}`),
    );
  }
  connect();

  return {
    checkIn,
    connected: () =>
      socket?.readyState === WebSocket.OPEN ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve)),
    async stop() {
      stopped = true;
      scripts.stop();
      clearTimeout(heartbeat);
      clearTimeout(reconnect);
      clearTimeout(resume);
      clearInterval(ping);
      waiters = [];
      while (underWay.size > 0) await Promise.allSettled([...underWay]);
      const ws = socket;
      if (ws && ws.readyState !== WebSocket.CLOSED) {
        await new Promise<void>((resolve) => {
          ws.once('close', () => resolve());
          ws.close(1000, 'Agent stopping');
          setTimeout(() => {
            ws.terminate();
            resolve();
          }, 1_000).unref();
        });
      }
    },
  };
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The answer to a query: { requestId, data } or { requestId, error: { code, message } }. */
export function answer(store: EventStore, query: AgentQuery & { requestId: string }): AgentMessage {
  const { requestId } = query;
  const notFound = (message: string) => ({ requestId, error: { code: 'NOT_FOUND', message } });
  const unknownLog = (name: string) => notFound(`Event log ${name} not found on ${store.computer}`);
  switch (query.type) {
    case 'eventlogs.list':
      return { requestId, data: store.list() };
    case 'eventlogs.get': {
      const log = store.get(String(query.name));
      return log ? { requestId, data: log } : unknownLog(query.name);
    }
    case 'eventlogs.events': {
      const filter: LiveEventFilter = {
        ...query,
        page: Math.max(1, Number(query.page) || 1),
        limit: Math.max(1, Number(query.limit) || 50),
      };
      const page = store.events(String(query.name), filter);
      return page ? { requestId, data: page } : unknownLog(query.name);
    }
    case 'eventlogs.event': {
      if (!store.get(String(query.name))) return unknownLog(query.name);
      const event = store.event(String(query.name), Number(query.recordId));
      return event
        ? { requestId, data: event }
        : notFound(`Record ${query.recordId} not found in event log ${query.name}`);
    }
    default:
      return {
        requestId,
        error: { code: 'UNSUPPORTED', message: `Unknown query type ${(query as { type: string }).type}` },
      };
  }
}

/** Sends one message in fragments of at most 32 KB, as API Gateway requires of frames. */
/** When this process last sent anything on its connection: a keep-alive is due only after a quiet spell. */
let lastSentAt = Date.now();

function sendMessage(ws: WebSocket, text: string): void {
  if (ws.readyState !== WebSocket.OPEN) return;
  lastSentAt = Date.now();
  const bytes = Buffer.from(text);
  let at = 0;
  do {
    const end = Math.min(bytes.length, at + frameBytes);
    ws.send(bytes.subarray(at, end), { binary: false, fin: end === bytes.length });
    at = end;
  } while (at < bytes.length);
}

const storedLevel = {
  information: 'info',
  verbose: 'info',
  warning: 'warning',
  error: 'error',
  critical: 'critical',
} as const;

/**
 * The store's recent warnings, errors and critical events as stored device events: the
 * category from the log and source, eventId naming the occurrence (log and record id), so that a
 * second submission of the same events stores nothing twice.
 */
export function storedEvents(events: { log: string; event: LiveEvent }[], max = 500) {
  return events
    .filter(({ event: e }) => e.level === 'warning' || e.level === 'error' || e.level === 'critical')
    .slice(-max)
    .map(({ log, event: e }) => {
      const category =
        log === 'Security'
          ? 'security'
          : /Kernel-Power|^disk$/.test(e.source)
            ? 'hardware'
            : log === 'System'
              ? 'system'
              : 'application';
      return {
        timestamp: e.timeCreated,
        level: storedLevel[e.level],
        category,
        source: e.source,
        eventId: `${log}:${e.recordId}`,
        message: e.message,
        details: { logName: log, recordId: e.recordId, windowsEventId: e.eventId, computer: e.computer, user: e.user },
      };
    });
}
