import { readdirSync, readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';

/** A PostgreSQL server's processes: the postmaster (postmaster.pid in its data directory) and its children. */
export function serverProcesses(dataDir: string): number[] {
  const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] === String(postmaster);
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

/** Sends `name` to each process still there (SIGSTOP freezes a server, SIGCONT thaws it, SIGKILL crashes it). */
export function signal(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // Already gone.
    }
  }
}

/**
 * When a relay freezes the server: on a connection whose open transaction sent `after` (any text of a message, e.g. a
 * statement or a prepared statement's name), the first later message holding `on`. Without `after`, the first message
 * holding `on`. A COMMIT or ROLLBACK that does not spring it ends the transaction, and `after` is looked for anew.
 */
export interface FreezeTrap {
  after?: string;
  on: string;
}

/** A TCP relay to a PostgreSQL server that freezes (SIGSTOPs) the server when an armed trap springs. */
export interface FreezingRelay {
  port: number;
  /** Arms `trap`; resolves once it has sprung, the server frozen before the message that sprung it goes on. */
  arm(trap: FreezeTrap): Promise<void>;
  /** Thaws the server if a trap froze it (SIGCONT); safe to call at any time. */
  thaw(): void;
  /**
   * Resolves once the server's end of the connection that sprung the last trap has closed: its backend has read and
   * run what it was sent before its client hung up, and exited.
   */
  settled(): Promise<void>;
  close(): void;
}

/**
 * Starts a relay to the server at `target` whose data directory is `dataDir`. A message that springs the trap first
 * stops every server process and then goes on: it waits in the frozen backend's socket, as a message sent to a server
 * that froze meanwhile does.
 */
export function startFreezingRelay(target: number, dataDir: string): Promise<FreezingRelay> {
  let armed: (FreezeTrap & { sprung: () => void }) | undefined;
  let frozen: number[] | undefined;
  let sprungClosed: Promise<void> = Promise.resolve();
  const relay = createServer((client: Socket) => {
    const upstream = connect(target, '127.0.0.1');
    const closed = new Promise<void>((resolve) => upstream.once('close', () => resolve()));
    let sentAfter = false;
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (armed?.after && text.includes(armed.after)) sentAfter = true;
      if (armed && (sentAfter || !armed.after) && text.includes(armed.on)) {
        const { sprung } = armed;
        armed = undefined;
        sprungClosed = closed;
        frozen = serverProcesses(dataDir);
        signal(frozen, 'SIGSTOP');
        sprung();
      } else if (/\bCOMMIT\b|\bROLLBACK\b/.test(text)) sentAfter = false;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  return new Promise((resolve) =>
    relay.listen(0, '127.0.0.1', () =>
      resolve({
        port: (relay.address() as { port: number }).port,
        arm: (trap) =>
          new Promise<void>((sprung) => {
            armed = { ...trap, sprung };
          }),
        thaw: () => {
          if (frozen) signal(frozen, 'SIGCONT');
          frozen = undefined;
        },
        settled: () => sprungClosed,
        close: () => relay.close(),
      }),
    ),
  );
}
