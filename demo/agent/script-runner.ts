/**
 * The simulated agent's side of script runs (docs/scripts.md "Runs"): it answers `script.run` without executing
 * anything on the host. It reports `started`, waits `sleepSeconds` (a parameter, default 0), then `finished` with
 * the exit code of the parameter `exitCode` (default 0) and a made-up output (`outputBytes` characters of it when
 * that parameter is given, to try chunking). A sleep beyond the run's timeout never finishes, as a hung script
 * would not: the service marks the item timed-out.
 */
import { answerFrames } from './answer-frames.ts';

export interface ScriptRunner {
  /** Takes a `script.run` message (or a chunk of one); `send` posts one text message on the connection. */
  receive(message: Record<string, unknown>, send: (text: string) => void): void;
  stop(): void;
}

export function scriptRunner(hostname: string): ScriptRunner {
  const timers = new Set<NodeJS.Timeout>();
  const partial = new Map<string, string[]>();

  const run = (m: Record<string, unknown>, send: (text: string) => void) => {
    const runItemId = String(m.runItemId);
    const parameters = (typeof m.parameters === 'object' && m.parameters !== null ? m.parameters : {}) as Record<
      string,
      unknown
    >;
    const exitCode = Math.trunc(Number(parameters.exitCode ?? 0)) || 0;
    const sleepMs = Math.max(0, Number(parameters.sleepSeconds ?? 0) * 1000) || 0;
    const outputBytes = Math.min(5_000_000, Math.max(0, Number(parameters.outputBytes ?? 0)) || 0);
    send(JSON.stringify({ runItemId, status: 'started' }));
    if (sleepMs > Number(m.timeoutSeconds) * 1000) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      const shown = Object.keys(parameters).join(', ') || 'none';
      const stdout =
        outputBytes > 0
          ? 'x'.repeat(outputBytes)
          : `Simulated ${String(m.language)} run on ${hostname} (parameters: ${shown}); nothing was executed\n`;
      const reply = {
        runItemId,
        status: 'finished',
        exitCode,
        stdout,
        stderr: exitCode === 0 ? '' : `Simulated failure with exit code ${exitCode}\n`,
        durationMs: sleepMs,
      };
      for (const frame of answerFrames(reply)) send(frame);
    }, sleepMs);
    timers.add(timer);
  };

  return {
    receive(message, send) {
      if (message.chunk === undefined) return run(message, send);
      // A large script arrives in chunks whose data, concatenated, is the whole message.
      const id = String(message.runItemId);
      const pieces = partial.get(id) ?? [];
      pieces[Number(message.chunk)] = String(message.data);
      partial.set(id, pieces);
      if (pieces.filter((p) => p !== undefined).length < Number(message.chunks)) return;
      partial.delete(id);
      run(JSON.parse(pieces.join('')) as Record<string, unknown>, send);
    },
    stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
