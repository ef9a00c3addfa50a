import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where witnessed files are kept: written once, never replaced, listed by organization. */
export interface WitnessStore {
  location: string;
  /** Writes a new object; throws if it exists already. */
  put(key: string, body: string): Promise<void>;
  /** The keys under `prefix` (an organization's folder), or the organization folders when `prefix` is ''. */
  list(prefix: string): Promise<string[]>;
  get(key: string): Promise<string>;
}

/** A directory witness: one folder per organization, files written exclusively and read-only. */
export function directoryWitnessStore(dir: string): WitnessStore {
  return {
    location: dir,
    async put(key, body) {
      const path = join(dir, key);
      await mkdir(join(path, '..'), { recursive: true });
      await writeFile(path, body, { flag: 'wx', mode: 0o444 });
    },
    async list(prefix) {
      try {
        const entries = await readdir(join(dir, prefix), { withFileTypes: true });
        return entries
          .filter((entry) => (prefix === '' ? entry.isDirectory() : entry.isFile()))
          .map((entry) => (prefix === '' ? entry.name : `${prefix}${entry.name}`))
          .sort();
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return [];
        throw error;
      }
    },
    get: (key) => readFile(join(dir, key), 'utf8'),
  };
}
