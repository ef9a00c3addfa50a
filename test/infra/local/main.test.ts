import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '#infra/local/embedded-postgres.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.close());

interface Started {
  child: ChildProcess;
  output: () => string;
  base: string;
}

/** Runs `npm start`'s entry point against this file's database, until its health check answers. */
async function start(): Promise<Started> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.urls.admin, PORT: String(port), HOST: '127.0.0.1', JWT_SECRET: 'main-test-secret', NODE_ENV: 'development' };
  // The server derives its role connections from DATABASE_URL, as on a developer's machine.
  delete env.APP_DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const base = `http://127.0.0.1:${port}/api/v1`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`exited early:\n${output}`);
    const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (ok && output.includes('AGENT_TOKEN=')) return { child, output: () => output, base };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`no health within 20 s:\n${output}`);
}

const printed = (output: string, name: string) => new RegExp(`export ${name}=(\\S+)`).exec(output)?.[1];

function stop(started: Started): Promise<number | null> {
  return new Promise((done) => {
    started.child.once('exit', (code) => done(code));
    started.child.kill('SIGINT');
  });
}

describe('npm start', () => {
  it('serves the API, prints working demo tokens, and stops cleanly on Ctrl-C', async () => {
    const started = await start();
    const output = started.output();
    expect(output).toContain('JWT_SECRET=main-test-secret');
    expect(output).toContain('JWT_ISSUER=logbook-local');
    const orgToken = printed(output, 'ORG_ADMIN_TOKEN')!;
    const devices = (await fetch(`${started.base}/devices`, { headers: { authorization: `Bearer ${orgToken}` } }).then((r) => r.json())) as { data: { hostname: string }[] };
    expect(devices.data.map((d) => d.hostname)).toEqual(['demo-device']);
    const partners = await fetch(`${started.base}/partners`, { headers: { authorization: `Bearer ${printed(output, 'PLATFORM_ADMIN_TOKEN')}` } });
    expect(partners.status).toBe(200);
    expect(await stop(started)).toBe(0);
  });

  it('finds its demo tenant again on restart and gives the demo agent a fresh token', async () => {
    const first = await start();
    const firstAgentToken = printed(first.output(), 'AGENT_TOKEN');
    await stop(first);
    const second = await start();
    expect(printed(second.output(), 'AGENT_TOKEN')).not.toBe(firstAgentToken);
    await stop(second);
    const { rows } = await db.admin.query(`SELECT count(*) AS n FROM organizations WHERE name = 'Demo Organization'`);
    expect(rows).toEqual([{ n: 1 }]);
    const agents = await db.admin.query(`SELECT count(*) AS n FROM devices WHERE hostname = 'demo-device'`);
    expect(agents.rows).toEqual([{ n: 1 }]);
  });
});
