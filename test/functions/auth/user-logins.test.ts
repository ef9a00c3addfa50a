import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { type CognitoStub, startCognitoStub } from '#test/support/aws-stubs.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

// The stack's own user pool (identity: "cognito"): the users' functions get its id, and the SDK its endpoint.
let pool: CognitoStub;
beforeAll(async () => {
  pool = await startCognitoStub();
  Object.assign(process.env, {
    COGNITO_USER_POOL_ID: 'eu-west-1_Logbook1',
    AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: pool.endpoint,
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
});
afterAll(() => pool.close());

const t = useApi();
let acme: Tenant;
beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
});

const invite = (email: string) =>
  t.api.request('POST', '/api/v1/users', {
    token: acme.partnerToken,
    body: { email, name: 'Dana Tech', role: 'org_technician', orgId: acme.orgId },
  });
const stored = (email: string) =>
  t.db.admin
    .query<{ deleted: boolean }>('SELECT deleted_at IS NOT NULL AS deleted FROM users WHERE email = :email::text', {
      email,
    })
    .then((r) => r.rows);
const audited = (action: string, email: string) =>
  t.db.admin
    .query(
      `SELECT 1 FROM audit_logs WHERE action = :action::text AND details -> 'after' ->> 'email' = :email::text
          OR action = :action::text AND details -> 'before' ->> 'email' = :email::text`,
      { action, email },
    )
    .then((r) => r.rows.length);

describe("the stack's own user pool follows the users", () => {
  it('makes the login of an invited user, e-mail verified, invitation mailed by the pool', async () => {
    const reply = await invite('dana@acme.example');
    expect(reply.status).toBe(201);
    expect(pool.calls.at(-1)).toMatchObject({
      operation: 'AdminCreateUser',
      username: 'dana@acme.example',
      request: { UserPoolId: 'eu-west-1_Logbook1', DesiredDeliveryMediums: ['EMAIL'] },
    });
    expect(pool.logins.get('dana@acme.example')).toEqual({
      email: 'dana@acme.example',
      email_verified: 'true',
      name: 'Dana Tech',
    });
  });

  it('keeps a login that exists already and stores the user', async () => {
    pool.logins.set('back@acme.example', { email: 'back@acme.example' });
    expect((await invite('back@acme.example')).status).toBe(201);
    expect(await stored('back@acme.example')).toEqual([{ deleted: false }]);
  });

  it('stores and audits nothing when the pool does not answer (503), and the retry makes both', async () => {
    pool.failing = { status: 500, type: 'InternalErrorException' };
    const refused = await invite('late@acme.example');
    pool.failing = undefined;
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('UNAVAILABLE');
    expect(await stored('late@acme.example')).toEqual([]);
    expect(await audited('user.create', 'late@acme.example')).toBe(0);
    expect((await invite('late@acme.example')).status).toBe(201);
    expect(pool.logins.has('late@acme.example')).toBe(true);
    expect(await audited('user.create', 'late@acme.example')).toBe(1);
  });

  it("removes a deleted user's login, and a login already gone is no failure", async () => {
    const first = await invite('leaver@acme.example');
    expect((await t.api.request('DELETE', `/api/v1/users/${first.body.id}`, { token: acme.partnerToken })).status).toBe(
      204,
    );
    expect(pool.logins.has('leaver@acme.example')).toBe(false);
    expect(pool.calls.at(-1)).toMatchObject({ operation: 'AdminDeleteUser', username: 'leaver@acme.example' });

    const second = await invite('leaver@acme.example');
    pool.logins.delete('leaver@acme.example');
    expect(
      (await t.api.request('DELETE', `/api/v1/users/${second.body.id}`, { token: acme.partnerToken })).status,
    ).toBe(204);
    expect(await audited('user.delete', 'leaver@acme.example')).toBe(2);
  });

  it('keeps the user when the pool refuses to delete the login (503)', async () => {
    const user = await invite('stays@acme.example');
    pool.failing = { status: 400, type: 'TooManyRequestsException' };
    const refused = await t.api.request('DELETE', `/api/v1/users/${user.body.id}`, { token: acme.partnerToken });
    pool.failing = undefined;
    expect(refused.status).toBe(503);
    expect(await stored('stays@acme.example')).toEqual([{ deleted: false }]);
    expect(await audited('user.delete', 'stays@acme.example')).toBe(0);
  });
});
