import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareDatabase, roleUrls } from '#infra/local/database.ts';
import { startEmbeddedPostgres } from '#infra/local/embedded-postgres.ts';
import { freePort } from '#infra/local/free-port.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { useCli } from '#test/support/cli.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { databaseName } from '#test/support/global-setup.ts';

/** `npm start`'s entry point. */
const server = useCli('infra/local/main.ts');

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.close());

/** A start builds the viewer and seeds the demo tenant: seconds when quiet, a minute or more on a loaded machine. */
const startBoundMs = 100_000;

interface Started {
  child: ChildProcess;
  output: () => string;
  base: string;
}

/** Runs `npm start`'s entry point against this file's database, until its health check answers. */
async function start(extraEnv: NodeJS.ProcessEnv = {}): Promise<Started> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.urls.admin,
    PORT: String(port),
    WS_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    JWT_SECRET: 'main-test-secret',
    NODE_ENV: 'development',
  };
  // Unless a test gives them, the server derives its role connections from DATABASE_URL, as on a developer's machine.
  delete env.APP_DATABASE_URL;
  delete env.AUDIT_ADMIN_DATABASE_URL;
  Object.assign(env, extraEnv);
  const child = spawn(process.execPath, server.args([]), {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const base = `http://127.0.0.1:${port}/api/v1`;
  // Ready once it prints its demo tokens, which it does after both gateways listen; an exit before that fails at
  // once with the server's output. The bound only turns a hung start into a failure that shows that output.
  await new Promise<void>((resolve, reject) => {
    const bound = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`not ready within ${startBoundMs} ms:\n${output}`));
    }, startBoundMs);
    const read = (chunk: Buffer) => {
      output += chunk;
      if (output.includes('export AGENT_TOKEN=')) {
        clearTimeout(bound);
        resolve();
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(bound);
      reject(new Error(`exited early (${code}):\n${output}`));
    });
  });
  const health = await fetch(`${base}/health`);
  expect(health.status).toBe(200);
  return { child, output: () => output, base };
}

const printed = (output: string, name: string) => new RegExp(`export ${name}=(\\S+)`).exec(output)?.[1];

/** Ctrl-C, and the exit code; a server still running long after is killed and the test fails with its output. */
function stop(started: Started): Promise<number | null> {
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      started.child.kill('SIGKILL');
      fail(new Error(`still running ${startBoundMs} ms after Ctrl-C:\n${started.output().slice(-4_000)}`));
    }, startBoundMs);
    started.child.once('exit', (code) => {
      clearTimeout(timer);
      done(code);
    });
    started.child.kill('SIGINT');
  });
}

describe('npm start', { timeout: 4 * startBoundMs }, () => {
  it('serves the API, prints working demo tokens, and stops cleanly on Ctrl-C', async () => {
    const started = await start();
    const output = started.output();
    expect(output).toContain('JWT_SECRET=main-test-secret');
    expect(output).toContain('JWT_ISSUER=logbook-local');
    const orgToken = printed(output, 'ORG_ADMIN_TOKEN')!;
    const devices = (await fetch(`${started.base}/devices`, { headers: { authorization: `Bearer ${orgToken}` } }).then(
      (r) => r.json(),
    )) as { data: { hostname: string }[] };
    // The demo organization also holds the migration fleet of demo/demo-posture.ts (MIG-*).
    expect(devices.data.map((d) => d.hostname).filter((h) => !h.startsWith('MIG-'))).toEqual(['demo-device']);
    const partners = await fetch(`${started.base}/partners`, {
      headers: { authorization: `Bearer ${printed(output, 'PLATFORM_ADMIN_TOKEN')}` },
    });
    expect(partners.status).toBe(200);
    expect(await stop(started)).toBe(0);
  });

  it("keeps the audit spool's rows of another database and says so at start", async () => {
    const { rows } = await db.admin.query<{ id: string }>(
      'SELECT system_identifier::text AS id FROM pg_control_system()',
    );
    const database = { systemIdentifier: rows[0]!.id, name: `held_elsewhere_${process.pid}` };
    const folder = `.data/audit-spool/${database.systemIdentifier}-${database.name}`;
    mkdirSync(folder, { recursive: true });
    const row = { orgId: randomUUID(), action: 'organization.update', details: {}, timestamp: null };
    writeFileSync(`${folder}/pending.jsonl`, `${JSON.stringify({ database, row })}\n`);
    try {
      const started = await start();
      expect(started.output()).toContain(
        `audit spool: 1 audit row(s) of database ${database.name} (system identifier ${database.systemIdentifier}) kept for it, not replayed here`,
      );
      expect(await stop(started)).toBe(0);
      expect(readFileSync(`${folder}/pending.jsonl`, 'utf8')).toContain(row.orgId);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('finds its demo tenant again on restart and gives the demo agent a fresh token', async () => {
    const first = await start();
    const firstAgentToken = printed(first.output(), 'AGENT_TOKEN');
    await stop(first);
    const second = await start();
    expect(printed(second.output(), 'AGENT_TOKEN')).not.toBe(firstAgentToken);
    await stop(second);
    const { rows } = await db.admin.query(
      `SELECT count(*) AS n FROM organizations WHERE name = 'Demo Organization' AND deleted_at IS NULL`,
    );
    expect(rows).toEqual([{ n: 1 }]);
    const agents = await db.admin.query(
      `SELECT count(*) AS n FROM devices WHERE hostname = 'demo-device' AND deleted_at IS NULL`,
    );
    expect(agents.rows).toEqual([{ n: 1 }]);
  });

  it('starts again after the demo organization was deleted, with a new one holding the demo device', async () => {
    const first = await start();
    const orgId = /organization (\S+)/.exec(first.output())![1];
    const deleted = await fetch(`${first.base}/orgs/organizations/${orgId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${printed(first.output(), 'PARTNER_ADMIN_TOKEN')}` },
    });
    expect(deleted.status).toBe(204);
    await stop(first);
    const second = await start();
    const orgToken = printed(second.output(), 'ORG_ADMIN_TOKEN')!;
    const devices = (await fetch(`${second.base}/devices`, { headers: { authorization: `Bearer ${orgToken}` } }).then(
      (r) => r.json(),
    )) as { data: { hostname: string }[] };
    // The demo organization also holds the migration fleet of demo/demo-posture.ts (MIG-*).
    expect(devices.data.map((d) => d.hostname).filter((h) => !h.startsWith('MIG-'))).toEqual(['demo-device']);
    expect(await stop(second)).toBe(0);
  });

  it('leaves the passwords of the roles whose connection is given in APP_DATABASE_URL and AUDIT_ADMIN_DATABASE_URL alone', async () => {
    // Roles belong to the whole cluster, whose roles the other files' servers and migrations give their local
    // passwords at any moment: this test's server runs on a cluster of its own, where nothing else touches them.
    const cluster = await startEmbeddedPostgres({ dir: `.data/test-postgres-roles-${process.pid}`, persistent: false });
    const server = createPgDb({ connectionString: cluster.url, max: 1 });
    const urls = roleUrls(databaseName(cluster.url, 'logbook'));
    const admin = createPgDb({ connectionString: urls.admin, max: 1 });
    try {
      await server.query('CREATE DATABASE logbook');
      await prepareDatabase(urls.admin);
      // Each ALTER ROLE … PASSWORD stores a freshly salted hash, so an unchanged hash means an untouched password.
      const passwords = async () =>
        (
          await admin.query(
            `SELECT rolname, rolpassword FROM pg_authid WHERE rolname IN ('logbook_app', 'logbook_audit_admin') ORDER BY rolname`,
          )
        ).rows;
      const before = await passwords();
      expect(before).toHaveLength(2);
      const started = await start({
        DATABASE_URL: urls.admin,
        APP_DATABASE_URL: urls.app,
        AUDIT_ADMIN_DATABASE_URL: urls.auditAdmin,
      });
      expect(await stop(started)).toBe(0);
      expect(await passwords()).toEqual(before);
    } finally {
      await admin.close();
      await server.close();
      await cluster.stop();
    }
  });

  it('with JWT_JWKS_URL set, says user tokens come from the identity provider instead of printing demo user tokens', async () => {
    const started = await start({ JWT_JWKS_URL: 'https://idp.example.test/.well-known/jwks.json' });
    const output = started.output();
    expect(output).toContain('JWT_JWKS_URL=https://idp.example.test/.well-known/jwks.json');
    expect(output).toMatch(/user tokens come from the identity provider/i);
    expect(output).not.toMatch(/export (PLATFORM|PARTNER|ORG)_ADMIN_TOKEN=/);
    expect(output).not.toContain('HS256');
    expect(printed(output, 'AGENT_TOKEN')).toMatch(/^lba_/);
    expect(await stop(started)).toBe(0);
  });

  it('with LOGBOOK_DB_DRIVER=data-api, serves the API through a local RDS Data API, as in Lambda', async () => {
    const started = await start({ LOGBOOK_DB_DRIVER: 'data-api' });
    expect(started.output()).toMatch(/Data API +http:\/\/127\.0\.0\.1:\d+ \(LOGBOOK_DB_DRIVER=data-api\)/);
    const orgToken = printed(started.output(), 'ORG_ADMIN_TOKEN')!;
    const devices = (await fetch(`${started.base}/devices`, {
      headers: { authorization: `Bearer ${orgToken}` },
      signal: AbortSignal.timeout(startBoundMs),
    }).then(
      (r) => r.json(),
      (error: unknown) => {
        throw new Error(`GET /devices through the Data API: ${String(error)}\n${started.output().slice(-4_000)}`);
      },
    )) as { data: { hostname: string }[] };
    // The demo organization also holds the migration fleet of demo/demo-posture.ts (MIG-*).
    expect(devices.data.map((d) => d.hostname).filter((h) => !h.startsWith('MIG-'))).toEqual(['demo-device']);
    const { rows } = await db.admin.query<{ application: string }>(
      'SELECT DISTINCT application_name AS application FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE :prefix::text',
      { prefix: 'logbook-%' },
    );
    expect(rows.map((r) => r.application)).toEqual(['logbook-data-api']);
    expect(await stop(started)).toBe(0);
  });
});
