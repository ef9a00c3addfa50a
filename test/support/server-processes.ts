import { readdirSync, readFileSync } from 'node:fs';

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
