import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { startCognitoStub } from '#test/support/aws-stubs.ts';
import { useCli } from '#test/support/cli.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';

const t = useApi();
const cli = useCli('tools/bootstrap.ts');
let dataApi: LocalDataApi;
beforeAll(async () => {
  dataApi = await startLocalDataApi(t.db);
});
afterAll(() => dataApi?.close());

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `npm run bootstrap`'s entry point; locally against this file's database unless `env` says otherwise. */
function bootstrap(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.db.urls.admin, PORT: '3999' };
  for (const name of ['DB_CLUSTER_ARN', 'OWNER_DB_SECRET_ARN', 'DB_NAME', 'DATA_API_ENDPOINT', 'JWT_JWKS_URL'])
    delete childEnv[name];
  const child = spawn(process.execPath, cli.args(args), {
    env: { ...childEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout, stderr })));
}

const stored = async (partnerName: string) => {
  const partners = await t.db.admin.query<{ id: string }>('SELECT id FROM partners WHERE name = :name::text', {
    name: partnerName,
  });
  const users = await t.db.admin.query<{ email: string; role: string; partnerId: string }>(
    `SELECT email, role, partner_id AS "partnerId" FROM users WHERE partner_id = ANY (:ids::uuid[])`,
    { ids: `{${partners.rows.map((p) => p.id).join(',')}}` },
  );
  return { partners: partners.rows, users: users.rows };
};

describe('npm run bootstrap', () => {
  it('creates the first partner and its administrator and prints a sign-in link that works', async () => {
    const run = await bootstrap(['--partner', 'First Hour MSP', '--admin-email', 'Owner@FirstHour.example']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const partnerId = /partner "First Hour MSP" created: (\S+)/.exec(run.stdout)?.[1];
    expect(run.stdout).toMatch(/administrator owner@firsthour\.example created: \S+ \(partner_admin\)/);
    expect(await stored('First Hour MSP')).toEqual({
      partners: [{ id: partnerId }],
      users: [{ email: 'owner@firsthour.example', role: 'partner_admin', partnerId }],
    });
    const link = /sign in \(valid 24 hours\): (http:\/\/localhost:3999\/#token=(\S+))/.exec(run.stdout);
    expect(link).not.toBeNull();
    const token = link![2]!;
    const created = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token,
      body: { name: 'First customer' },
    });
    expect(created.status).toBe(201);
    expect(created.body.partnerId).toBe(partnerId);
  });

  it("makes the administrator's login in the stack's own user pool, and keeps it on a second run", async () => {
    const pool = await startCognitoStub();
    try {
      const env = {
        COGNITO_USER_POOL_ID: 'eu-west-1_Logbook1',
        AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: pool.endpoint,
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
      };
      const args = ['--partner', 'Pooled MSP', '--admin-email', 'owner@pooled.example', '--admin-name', 'Owner'];
      const first = await bootstrap(args, env);
      expect(first.status).toBe(0);
      expect(first.stdout).toContain('login of owner@pooled.example in user pool eu-west-1_Logbook1');
      expect(pool.logins.get('owner@pooled.example')).toEqual({
        email: 'owner@pooled.example',
        email_verified: 'true',
        name: 'Owner',
      });
      expect((await bootstrap(args, env)).status).toBe(0);
      expect(pool.calls.map((call) => call.operation)).toEqual(['AdminCreateUser', 'AdminCreateUser']);
      expect(pool.logins.size).toBe(1);
    } finally {
      pool.close();
    }
  });

  it('says the partner exists on a second run, exits 0 and creates nothing', async () => {
    const args = ['--partner', 'Twice MSP', '--admin-email', 'admin@twice.example'];
    const first = await bootstrap(args);
    expect(first.status).toBe(0);
    const again = await bootstrap(args);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/partner "Twice MSP" exists: \S+; not created again/);
    expect(again.stdout).toMatch(/administrator admin@twice\.example exists/);
    const { partners, users } = await stored('Twice MSP');
    expect(partners).toHaveLength(1);
    expect(users).toHaveLength(1);
  });

  it('runs through the Data API with the owner secret, as the deploying role does against a stack', async () => {
    const env = {
      DB_CLUSTER_ARN: dataApi.resourceArn,
      DB_NAME: dataApi.database,
      OWNER_DB_SECRET_ARN: dataApi.secretArns.admin,
      DATA_API_ENDPOINT: dataApi.server.url,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    };
    const args = [
      '--partner',
      'Deployed MSP',
      '--admin-email',
      'ops@deployed.example',
      '--viewer-url',
      'https://d1.example.net/',
    ];
    const run = await bootstrap(args, env);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('partner "Deployed MSP" created');
    expect(run.stdout).toMatch(
      /sign in at https:\/\/d1\.example\.net\/ with a token of your identity provider carrying role partner_admin, partnerId \S+, e-mail ops@deployed\.example/,
    );
    const again = await bootstrap(args, env);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('partner "Deployed MSP" exists');
    expect((await stored('Deployed MSP')).users).toHaveLength(1);
  });

  it("refuses (1) an administrator address that is another partner's user, and (2) a missing address", async () => {
    expect((await bootstrap(['--partner', 'Owner One', '--admin-email', 'shared@owner.example'])).status).toBe(0);
    const refused = await bootstrap(['--partner', 'Owner Two', '--admin-email', 'shared@owner.example']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('shared@owner.example is already a user');
    expect((await stored('Owner Two')).partners).toEqual([]);
    const usage = await bootstrap(['--partner', 'Owner Three']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('give --admin-email');
  });
});
