import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Db } from '../db/db.ts';
import { AgentBadResponse, AgentTimeout, DeviceOffline, DomainError } from '../errors.ts';
import { specifiedLog } from '../logger.ts';
import { postToConnection } from './agent-channel.ts';
import type { AgentQuery } from './protocol.ts';
import * as store from './store.ts';

/**
 * How long a query waits for its agent. A 30 s wait is what the caller may see, and API
 * Gateway cuts an HTTP integration at 30 s: waiting 28 s leaves the function time to answer 504
 * itself, after authentication and even after a cold start.
 */
export const defaultTimeoutMs = 28_000;
const timeoutMs = () => Number(process.env.LIVE_QUERY_TIMEOUT_MS) || defaultTimeoutMs;

/** Polling the database for the answer: soon at first (a nearby agent answers in milliseconds), then less often. */
export const polling = { firstMs: 10, growth: 1.25, maxMs: 100 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Relays a query to the device's agent and returns the `data` of its answer, checked against `schema`; the
 * answer arrives in another invocation, so the query is a row polled here (docs/ARCHITECTURE.md "Live queries").
 */
export async function askAgent<T extends z.ZodType>(
  db: Db,
  deviceId: string,
  query: AgentQuery,
  schema: T,
): Promise<z.output<T>> {
  const connectionId = await store.selectConnection(db, deviceId);
  if (!connectionId) throw DeviceOffline();
  const requestId = randomUUID();
  const waitMs = timeoutMs();
  const deadline = Date.now() + waitMs;
  await store.insertRequest(db, { requestId, deviceId, connectionId, type: query.type, timeoutMs: waitMs });
  try {
    if (!(await send(db, connectionId, requestId, query))) throw DeviceOffline();
    const answer = await waitForAnswer(db, requestId, query, deadline, waitMs);
    return selectAnswer(answer, { requestId, deviceId, query }, schema);
  } finally {
    await store.deleteRequest(db, requestId);
  }
}

/** Posts the query; a connection API Gateway calls gone is forgotten (unless still connecting), and false returned. */
async function send(db: Db, connectionId: string, requestId: string, query: AgentQuery): Promise<boolean> {
  if ((await postToConnection(connectionId, { ...query, requestId })) === 'sent') return true;
  await store.deleteGoneConnectionRow(db, connectionId);
  return false;
}

/**
 * Waits until every piece of the answer arrived and returns its text. When the agent reconnected
 * meanwhile (the device's connection changed), the query is sent again on the new connection, which
 * then owns it: whatever the old connection sends is ignored.
 */
async function waitForAnswer(
  db: Db,
  requestId: string,
  query: AgentQuery,
  deadline: number,
  waitMs: number,
): Promise<string> {
  let pause = polling.firstMs;
  for (;;) {
    const state = await store.requestState(db, requestId);
    if (!state) throw AgentTimeout(waitMs);
    if (state.chunks !== null && state.received >= state.chunks)
      return store.selectAnswer(db, requestId, state.connectionId);
    const current = state.currentConnectionId;
    if (
      current &&
      current !== state.connectionId &&
      (await store.moveRequest(db, requestId, state.connectionId, current)) &&
      !(await send(db, current, requestId, query))
    ) {
      // Not delivered (the new connection may still be connecting): handed back, so the next round asks again.
      await store.moveRequest(db, requestId, current, state.connectionId);
    }
    const left = deadline - Date.now();
    if (left <= 0) throw AgentTimeout(waitMs);
    await sleep(Math.min(pause, left));
    pause = Math.min(pause * polling.growth, polling.maxMs);
  }
}

interface Asked {
  requestId: string;
  deviceId: string;
  query: AgentQuery;
}

/**
 * Reads an answer's text: the whole message { requestId, data | error }, or (from chunks) the JSON of
 * the data alone. A `data` given as JSON text is read too.
 */
function selectAnswer<T extends z.ZodType>(text: string, asked: Asked, schema: T): z.output<T> {
  const message = parseJson(text);
  if (message === undefined) throw unreadable(asked, 'the answer is not JSON');
  const envelope = isEnvelope(message, asked.requestId) ? message : { data: message };
  if (envelope.error !== undefined && envelope.error !== null) throw agentError(envelope.error, asked);
  const data = typeof envelope.data === 'string' ? parseJson(envelope.data) : envelope.data;
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw unreadable(asked, issue ? `${issue.path.join('.') || 'data'}: ${issue.message}` : 'no data');
  }
  return parsed.data;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isEnvelope(value: unknown, requestId: string): value is { data?: unknown; error?: unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    (value as { requestId?: unknown }).requestId === requestId
  );
}

/** Logged as "Failed to parse agent response for event"; the caller gets 502. */
function unreadable(asked: Asked, reason: string): DomainError {
  specifiedLog.agentResponseUnreadable(
    `${asked.query.type} (request ${asked.requestId}, device ${asked.deviceId}): ${reason}`,
  );
  return AgentBadResponse(`The agent's answer could not be read: ${reason}`);
}

/** An error the agent reports: NOT_FOUND (or no code) is the 404 the caller would get from us; anything else a 502. */
function agentError(error: unknown, asked: Asked): DomainError {
  const reported =
    typeof error === 'string'
      ? { message: error }
      : typeof error === 'object'
        ? (error as { code?: unknown; message?: unknown })
        : undefined;
  if (!reported) return unreadable(asked, 'the error is neither text nor an object');
  const code = typeof reported.code === 'string' ? reported.code : undefined;
  const message =
    typeof reported.message === 'string' && reported.message.trim() !== ''
      ? reported.message.slice(0, 1000)
      : undefined;
  if (code === undefined || /NOT_FOUND/i.test(code))
    return new DomainError('NOT_FOUND', message ?? 'Not found on the device');
  return AgentBadResponse(`The agent reported ${code.slice(0, 100)}${message ? `: ${message}` : ''}`);
}
