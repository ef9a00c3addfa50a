/**
 * The messages of the live-query channel between the service and an agent (docs/agents.md
 * "Agent protocol"). The service sends a query as one WebSocket message; the agent answers
 * with one message, or with chunks when the answer would exceed API Gateway's 128 KB message limit.
 */

/** API Gateway's limit of one WebSocket message, either way; larger messages close the connection (1009). */
export const maxMessageBytes = 128 * 1024;

/** How the agents' WebSocket API picks a message's route: by its `type` ($default when it has none, or no route). */
export const messageRouteSelection = '$request.body.type';

/**
 * Message types API Gateway takes itself (a MOCK integration, no Lambda, no reply): the keep-alive, whose only work is
 * being a message on the connection, which keeps API Gateway's idle timeout away.
 */
export const gatewayOnlyMessageTypes = ['ping'] as const;

/** At most this many chunks make one answer (64 x 100 KB, about Lambda's 6 MB response limit). */
export const maxChunks = 64;

/** An answer's id (a live query's requestId, a script run's runItemId) must be a UUID to be looked up. */
export const answerId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One piece of a chunked answer: `data` of all chunks, concatenated in chunk order, is the answer's JSON text. */
export interface AnswerChunk {
  chunk: number;
  chunks: number;
  data: string;
}

/** Whether an agent's message is a piece of a chunked answer (it names chunk or chunks). */
export const isChunk = (message: Record<string, unknown>) =>
  message.chunk !== undefined || message.chunks !== undefined;

/** A chunk's fields when they make sense (at most maxChunks chunks, an index within them, text data), else undefined. */
export function chunkOf(message: Record<string, unknown>): AnswerChunk | undefined {
  const { chunk, chunks, data } = message;
  const valid =
    Number.isInteger(chunks) &&
    (chunks as number) >= 1 &&
    (chunks as number) <= maxChunks &&
    Number.isInteger(chunk) &&
    (chunk as number) >= 0 &&
    (chunk as number) <= (chunks as number) &&
    typeof data === 'string';
  return valid ? { chunk: chunk as number, chunks: chunks as number, data: data as string } : undefined;
}

/** An agent message's JSON object, or undefined when the text is not one. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Levels of a live event. */
export const liveEventLevels = ['information', 'warning', 'error', 'critical', 'verbose'] as const;
export type LiveEventLevel = (typeof liveEventLevels)[number];

/** Filters and page of an `eventlogs.events` query, as the REST caller gave them (validated). */
export interface LiveEventFilter {
  page: number;
  limit: number;
  level?: LiveEventLevel;
  source?: string;
  /** ISO 8601 with an offset. */
  startTime?: string;
  endTime?: string;
  eventId?: number;
}

/** A query for the agent, without its requestId. */
export type AgentQuery =
  | { type: 'eventlogs.list' }
  | { type: 'eventlogs.get'; name: string }
  | ({ type: 'eventlogs.events'; name: string } & LiveEventFilter)
  | { type: 'eventlogs.event'; name: string; recordId: number };

/**
 * A script run item for the agent (docs/scripts.md "Runs"). Above maxMessageBytes it travels as chunks
 * `{ type: 'script.run', runItemId, chunk, chunks, data }` whose data, concatenated, is this message's JSON text.
 */
export interface ScriptRunMessage {
  type: 'script.run';
  runItemId: string;
  runId: string;
  scriptId: string;
  scriptVersion: number;
  language: string;
  content: string;
  parameters: Record<string, string | number | boolean>;
  timeoutSeconds: number;
  runAs: string;
}
export type ScriptRunChunk = { type: 'script.run'; runItemId: string; chunk: number; chunks: number; data: string };

/**
 * Patches to install (docs/patching.md): catalogue ids, each with its externalId in `patches`; the agent answers
 * `patch.result` once per patch.
 */
export interface PatchInstallMessage {
  type: 'patch.install';
  jobId: string;
  patchIds: string[];
  patches: { patchId: string; externalId: string; kb: string | null; title: string; requiresReboot: boolean }[];
  rebootPolicy: 'never' | 'if-required' | 'always';
  rebootWarningMinutes: number;
  deadline: string;
}

/** What the service sends on an agent's connection. */
export type ServiceMessage =
  | (AgentQuery & { requestId: string })
  | ScriptRunMessage
  | ScriptRunChunk
  | PatchInstallMessage
  // Another connection of the same agent took over this one, which is closed next: the agent should not reconnect.
  | { type: 'connection.replaced' }
  // The answer to a heartbeat sent on the connection: what POST /agents/{id}/heartbeat answers.
  | { type: 'heartbeat.ack'; ok: true; serverTime: string; configVersion: string; heartbeatSeconds: number }
  // A message of the agent the service refused (a heartbeat with an invalid field: nothing was stored).
  | { type: 'error'; inReplyTo: string; error: { code: string; message: string; details?: unknown } };

/** An error the agent reports instead of data; code NOT_FOUND (unknown log, record not found) is a 404. */
export interface AgentError {
  code?: string;
  message?: string;
}

/** What an agent sends: an answer, a chunk of one, or a keep-alive (anything without a requestId). */
export type AgentMessage =
  | { requestId: string; data: unknown }
  | { requestId: string; error: AgentError | string }
  // `data` of the chunks, concatenated in chunk order, is the JSON text of the whole answer { requestId, data | error }.
  | { requestId: string; chunk: number; chunks: number; data: string }
  | { type: 'ping' }
  // The heartbeat of POST /agents/{id}/heartbeat, carried by the connection (answered heartbeat.ack, or error).
  | { type: 'heartbeat'; [field: string]: unknown };
