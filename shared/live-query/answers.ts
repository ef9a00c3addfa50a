import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { type AnswerChunk, answerId, chunkOf, isChunk, parseObject } from './protocol.ts';
import * as store from './store.ts';

type MessageReceiver = (db: Db, connectionId: string, message: Record<string, unknown>) => Promise<void>;
const receivers = new Map<string, MessageReceiver>();

/**
 * Messages naming `field` (a script run's `runItemId`) go to `receiver` instead of a live query: registered by the
 * composition layer (functions/ws), so that the channel knows no domain answering on it.
 */
export function receiveMessagesNaming(field: string, receiver: MessageReceiver): void {
  receivers.set(field, receiver);
}

const typeReceivers = new Map<string, MessageReceiver>();

/**
 * Messages of this `type` (an agent's `heartbeat`) go to `receiver`: registered by the composition layer like
 * receiveMessagesNaming.
 */
export function receiveMessagesOfType(type: string, receiver: MessageReceiver): void {
  typeReceivers.set(type, receiver);
}

/**
 * $default: a message from an agent. An answer (or a chunk of one) is stored for the query that waits
 * for it, if this connection owns that query; the asking function reads and checks it
 * (shared/live-query/relay.ts); a message of a registered type (a heartbeat) or naming a registered field (a script
 * run's runItemId) goes to its receiver.
 * Anything without a requestId (a keep-alive ping) is only there to keep API Gateway from closing an idle
 * connection: it reaches no database, so idle agents let Aurora pause.
 */
export async function receiveAgentMessage(db: Db, connectionId: string, body: string): Promise<void> {
  const message = parseObject(body);
  const byType = message && typeof message.type === 'string' ? typeReceivers.get(message.type) : undefined;
  if (byType && message) return byType(db, connectionId, message);
  // Script runs answer on the same channel, naming their run item instead of a request.
  for (const [field, receive] of receivers)
    if (message && typeof message[field] === 'string') return receive(db, connectionId, message);
  // An answer that is not even JSON still fails its query at once (502) when its requestId can be made out.
  const requestId = message ? message.requestId : /"requestId"\s*:\s*"([^"]+)"/.exec(body)?.[1];
  if (typeof requestId !== 'string' || !answerId.test(requestId)) return;
  const kept = await store.insertChunk(db, { requestId, connectionId, ...piece(message, body) });
  if (!kept)
    logger.info('Ignored an agent message for a query its connection does not own', { connectionId, requestId });
}

/**
 * Which piece of the answer a message is. A chunk { chunk, chunks, data } carries a part of the
 * answer's text; any other message is the whole answer, one piece. A chunk that makes no sense is
 * taken as the whole answer, so that its query fails as unreadable instead of waiting out its time.
 */
function piece(message: Record<string, unknown> | undefined, body: string): AnswerChunk {
  const whole = { chunk: 0, chunks: 1, data: body };
  if (!message || !isChunk(message)) return whole;
  return chunkOf(message) ?? whole;
}
