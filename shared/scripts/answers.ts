import type { Db } from '../db/db.ts';
import { answerId, chunkOf, isChunk, parseObject } from '../live-query/protocol.ts';
import { logger } from '../logger.ts';
import { finishItems } from './outcome.ts';
import * as store from './store.ts';

/** stdout and stderr of a run item are each kept up to this many characters (docs/scripts.md "Runs"). */
export const outputChars = 8_000;

/**
 * An agent's message about a run item ($default; docs/scripts.md "Runs"): `started`, `finished` with its exit code,
 * `failed` with an error, or a chunk { runItemId, chunk, chunks, data } of a large one. Only an item of the
 * connection's own device that still waits for its answer takes it; anything else is ignored.
 */
export async function receiveRunMessage(db: Db, connectionId: string, message: Record<string, unknown>): Promise<void> {
  const runItemId = message.runItemId;
  if (typeof runItemId !== 'string' || !answerId.test(runItemId)) return;
  if (!isChunk(message)) return applyAnswer(db, connectionId, runItemId, message);
  const piece = chunkOf(message);
  if (!piece) return finish(db, connectionId, runItemId, badAnswer('a chunk without a valid chunk, chunks and data'));
  const state = await store.insertItemChunk(db, { runItemId, connectionId, ...piece });
  if (!state) return ignored(connectionId, runItemId);
  if (state.received < state.chunks) return;
  const whole = parseObject(await store.takeItemChunks(db, runItemId));
  if (!whole || whole.runItemId !== runItemId)
    return finish(db, connectionId, runItemId, badAnswer('the chunks do not make one answer for this run item'));
  return applyAnswer(db, connectionId, runItemId, whole);
}

async function applyAnswer(db: Db, connectionId: string, runItemId: string, m: Record<string, unknown>) {
  switch (m.status) {
    case 'started':
      if (await store.markItemRunning(db, runItemId, connectionId)) {
        const run = await store.selectItemRun(db, runItemId);
        if (run) await store.deleteDeliveredSecrets(db, [run]);
      } else ignored(connectionId, runItemId);
      return;
    case 'output':
      // Streamed output is not kept: the finished message carries the whole output.
      return;
    case 'finished': {
      if (!Number.isInteger(m.exitCode) || Math.abs(m.exitCode as number) > 2 ** 31 - 1)
        return finish(db, connectionId, runItemId, badAnswer('finished without a whole-number exitCode'));
      const stdout = output(m.stdout);
      const stderr = output(m.stderr);
      return finish(db, connectionId, runItemId, {
        status: 'completed',
        exitCode: m.exitCode as number,
        durationMs: duration(m.durationMs),
        stdout: stdout.text,
        stderr: stderr.text,
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        error: null,
      });
    }
    case 'failed': {
      const error = (typeof m.error === 'object' && m.error !== null ? m.error : {}) as Record<string, unknown>;
      return finish(db, connectionId, runItemId, {
        ...noOutput,
        durationMs: duration(m.durationMs),
        error: {
          code: typeof error.code === 'string' ? error.code.slice(0, 100) : 'AGENT_ERROR',
          message: typeof error.message === 'string' ? error.message.slice(0, 1000) : 'The agent reported a failure',
        },
      });
    }
    default:
      logger.info('Ignored a run item message of an unknown status', { connectionId, runItemId });
  }
}

const noOutput: store.ItemOutcome = {
  status: 'failed',
  exitCode: null,
  durationMs: null,
  stdout: null,
  stderr: null,
  stdoutTruncated: false,
  stderrTruncated: false,
  error: null,
};

/** The specified wording for what cannot be read: the item fails with AGENT_BAD_RESPONSE. */
function badAnswer(reason: string): store.ItemOutcome {
  return {
    ...noOutput,
    error: { code: 'AGENT_BAD_RESPONSE', message: `The agent's answer could not be read: ${reason}` },
  };
}

async function finish(db: Db, connectionId: string, runItemId: string, outcome: store.ItemOutcome): Promise<void> {
  const [finished] = await finishItems(db, async (tx) => {
    const item = await store.finishItem(tx, runItemId, connectionId, outcome);
    return item ? [item] : [];
  });
  if (!finished) return ignored(connectionId, runItemId);
  await store.deleteDeliveredSecrets(db, [finished.runId]);
}

function ignored(connectionId: string, runItemId: string): void {
  logger.info('Ignored an agent message for a run item its device does not wait on', { connectionId, runItemId });
}

/** Text the database can store, cut at outputChars. */
function output(value: unknown): { text: string | null; truncated: boolean } {
  if (typeof value !== 'string') return { text: null, truncated: false };
  const clean = value.toWellFormed().replaceAll('\u0000', '\ufffd');
  if (clean.length <= outputChars) return { text: clean, truncated: false };
  const end = /[\uD800-\uDBFF]/.test(clean[outputChars - 1]!) ? outputChars - 1 : outputChars;
  return { text: clean.slice(0, end), truncated: true };
}

const duration = (value: unknown) =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.min(Math.round(value), 2 ** 31 - 1) : null;
