import type { Db } from '../db/db.ts';
import { postToConnection } from '../live-query/agent-channel.ts';
import { disconnectAgent } from '../live-query/connections.ts';
import { maxMessageBytes, type ScriptRunMessage, type ServiceMessage } from '../live-query/protocol.ts';
import { logger } from '../logger.ts';
import { enqueue } from '../queue/work-queue.ts';
import * as store from './store.ts';

/**
 * A sent item not finished by its timeout plus this grace (the agent's answer on its way) is timed-out
 * (docs/scripts.md "Runs"); SCRIPT_RUN_GRACE_SECONDS changes it.
 */
export const graceSeconds = () => Number(process.env.SCRIPT_RUN_GRACE_SECONDS ?? 5);

/** Messages are posted this many at a time (a run on 1,000 devices). */
const concurrency = 50;
/** Attempts at delivering a device's pending items after its $connect (the connection may not be open yet). */
const connectAttempts = 3;
/** A script.run message above this is sent in chunks, as large live-query answers are. */
const chunkChars = 100 * 1024;

/** Sends a run's pending items to the devices that have a live connection; the others wait for their agent. */
export async function dispatchRun(db: Db, runId: string): Promise<void> {
  // An item claimed for a connection found gone waits again, and that connection's row is deleted: claimed again, it
  // goes to the device's live connection, if it has one (its $connect, already past, will not deliver it). Each round
  // deletes a row, so the rounds end.
  for (;;) {
    const claimed = await store.claimItems(db, { runId }, graceSeconds());
    if ((await sendClaimed(db, claimed, 'dispatch')).gone === 0) return;
  }
}

/**
 * At an agent's $connect: when script runs wait for its device (read by the statement recording the connection),
 * they go out once the connection is open, which is after $connect returns (a job of the work queue, a fifth of a
 * second later).
 */
export const connectDelivery = {
  read: store.itemsWaitingSql,
  run: async (_db: Db, deviceId: string, connectionId: string, waiting: boolean): Promise<void> => {
    if (waiting) await enqueue({ kind: 'script-runs.deliver', deviceId, connectionId, attempt: 1 }, 0.2);
  },
};

/**
 * After an agent's $connect (through the work queue: API Gateway takes no message before $connect returns), its
 * device's pending items, and items sent on an earlier connection that never started, go out on the new connection.
 */
export async function deliverPendingItems(
  db: Db,
  job: { deviceId: string; connectionId: string; attempt: number },
): Promise<void> {
  const claimed = await store.claimItems(db, job, graceSeconds());
  const { unsent } = await sendClaimed(db, claimed, 'connect');
  if (unsent > 0 && job.attempt < connectAttempts)
    await enqueue({ kind: 'script-runs.deliver', ...job, attempt: job.attempt + 1 }, job.attempt);
}

/**
 * Posts each claimed item; answers how many could not be sent (those wait again as pending), and how many of those
 * found their connection gone at dispatch (its row deleted).
 */
async function sendClaimed(
  db: Db,
  claimed: store.ClaimedItem[],
  why: 'dispatch' | 'connect',
): Promise<{ unsent: number; gone: number }> {
  if (claimed.length === 0) return { unsent: 0, gone: 0 };
  const contents = new Map<string, Promise<string>>();
  const contentOf = (item: store.ClaimedItem) => {
    const key = `${item.scriptId}:${item.scriptVersion}`;
    if (!contents.has(key)) contents.set(key, store.selectVersionContent(db, item.scriptId, item.scriptVersion));
    return contents.get(key)!;
  };
  let unsent = 0;
  let gone = 0;
  const queue = [...claimed];
  const worker = async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      const message: ScriptRunMessage = {
        type: 'script.run',
        runItemId: item.runItemId,
        runId: item.runId,
        scriptId: item.scriptId,
        scriptVersion: item.scriptVersion,
        language: item.language,
        content: await contentOf(item),
        parameters: { ...item.parameters, ...item.secrets },
        timeoutSeconds: item.timeoutSeconds,
        runAs: item.runAs,
      };
      const result = await post(item.connectionId, message);
      if (result === 'sent') continue;
      unsent += 1;
      await store.unclaimItem(db, item.runItemId, item.connectionId);
      // A connection gone at dispatch is stale; one just connected may only not be open yet.
      if (result === 'gone' && why === 'dispatch') {
        // Gone without its $disconnect: closed as $disconnect would (the device's presence check is armed).
        await disconnectAgent(db, item.connectionId);
        gone += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, worker));
  await store.deleteDeliveredSecrets(db, [...new Set(claimed.map((item) => item.runId))]);
  return { unsent, gone };
}

/** One message, or chunks { type, runItemId, chunk, chunks, data } when it would exceed API Gateway's 128 KB. */
async function post(connectionId: string, message: ScriptRunMessage): Promise<'sent' | 'gone' | 'failed'> {
  const text = JSON.stringify(message);
  const frames: ServiceMessage[] =
    Buffer.byteLength(text) <= maxMessageBytes - 1024
      ? [message]
      : pieces(text).map((data, chunk, all) => ({
          type: 'script.run' as const,
          runItemId: message.runItemId,
          chunk,
          chunks: all.length,
          data,
        }));
  try {
    for (const frame of frames) if ((await postToConnection(connectionId, frame)) === 'gone') return 'gone';
    return 'sent';
  } catch (error) {
    logger.warn('Could not send a script run to its agent', { runItemId: message.runItemId, error: String(error) });
    return 'failed';
  }
}

/** Cuts text into pieces of at most 100 K characters whose JSON-escaped chunk messages stay under 128 KB. */
function pieces(text: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(text.length, at + chunkChars);
    while (Buffer.byteLength(JSON.stringify(text.slice(at, end))) > maxMessageBytes - 1024)
      end = at + Math.floor((end - at) * 0.8);
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}
