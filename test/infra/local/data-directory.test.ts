import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddedDatabaseUnreachable } from '#infra/local/data-directory.ts';
import { useCli } from '#test/support/cli.ts';

const server = useCli('infra/local/main.ts');
const asRoot = process.getuid?.() === 0;

let closed: string;
let checkout: string;
beforeAll(() => {
  closed = mkdtempSync(join(tmpdir(), 'logbook-closed-'));
  checkout = join(closed, 'logbook');
  mkdirSync(checkout);
  chmodSync(closed, 0o700);
});
afterAll(() => rmSync(closed, { recursive: true, force: true }));

const passwordFiles = () => readdirSync(tmpdir()).filter((name) => name.startsWith('pg-password-'));

describe('npm start in a directory the database user cannot enter', () => {
  it.runIf(asRoot)('says so in one line with the fixes, exits 1 and leaves nothing behind', async () => {
    const before = passwordFiles();
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '9', WS_PORT: '9', NODE_ENV: 'development' };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, server.args([]), { cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const status = await new Promise((done) => child.once('close', done));
    expect(status).toBe(1);
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`cannot enter ${closed} (mode 0700)`);
    expect(lines[0]).toContain(`chmod o+x ${closed}`);
    expect(lines[0]).toContain('DATABASE_URL');
    expect(existsSync(join(checkout, '.data'))).toBe(false);
    expect(passwordFiles()).toEqual(before);
  });

  it('finds nothing to say once the directory is open to others, nor for a user who is not root', () => {
    expect(embeddedDatabaseUnreachable(join(checkout, '.data/postgres'), true)).toContain(closed);
    expect(embeddedDatabaseUnreachable(join(checkout, '.data/postgres'), false)).toBeUndefined();
    chmodSync(closed, 0o701);
    try {
      expect(embeddedDatabaseUnreachable(join(checkout, '.data/postgres'), true)).toBeUndefined();
    } finally {
      chmodSync(closed, 0o700);
    }
  });
});
