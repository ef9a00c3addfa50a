import { randomUUID } from 'node:crypto';
import { type JWTPayload, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const secret = () => new TextEncoder().encode(process.env.JWT_SECRET);
const issuer = () => process.env.JWT_ISSUER!;
const audience = () => process.env.JWT_AUDIENCE!;
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const t = useApi();
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
});

/** Claims of a valid org_admin of tenant A, to be varied per test. */
const orgAdminClaims = (): JWTPayload => ({
  role: 'org_admin',
  scope: 'organization',
  partnerId: a.partnerId,
  orgId: a.orgId,
  email: 'admin@org.test',
});

/** A token signed by hand, each part overridable; `exp: null` leaves expiry out. */
function sign(
  claims: JWTPayload,
  options: {
    sub?: string | null;
    iss?: string;
    aud?: string;
    exp?: number | string | null;
    key?: Uint8Array;
    alg?: string;
  } = {},
): Promise<string> {
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .setIssuer(options.iss ?? issuer())
    .setAudience(options.aud ?? audience())
    .setIssuedAt();
  if (options.sub !== null) jwt = jwt.setSubject(options.sub ?? randomUUID());
  if (options.exp !== null) jwt = jwt.setExpirationTime(options.exp ?? '1h');
  return jwt.sign(options.key ?? secret());
}

const listOrgs = (token?: string) => t.api.request('GET', ORGS, { token });

function expectError(reply: Reply, status: number, code: string) {
  expect(reply.status).toBe(status);
  expect(reply.body).toEqual({ error: { code, message: expect.any(String) } });
}

function expectUnauthenticated(reply: Reply) {
  expectError(reply, 401, 'UNAUTHENTICATED');
  expect(reply.headers.get('www-authenticate')).toBe('Bearer');
}

describe('user tokens', () => {
  it('a valid token lists the organizations of its holder', async () => {
    const reply = await listOrgs(await sign(orgAdminClaims()));
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((o: { id: string }) => o.id)).toEqual([a.orgId]);
  });

  it('a request without Authorization is refused with 401 and a Bearer challenge', async () => {
    expectUnauthenticated(await listOrgs());
  });

  it('an Authorization header of another scheme is refused with 401', async () => {
    expectUnauthenticated(
      await t.api.request('GET', ORGS, {
        headers: { authorization: `Basic ${Buffer.from('u:p').toString('base64')}` },
      }),
    );
  });

  it('a bearer value that is not a JWT is refused with 401', async () => {
    expectUnauthenticated(await listOrgs('not-a-jwt'));
  });

  it('an expired token is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { exp: Math.floor(Date.now() / 1000) - 60 })));
  });

  it('a token of another issuer is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { iss: 'https://evil.example' })));
  });

  it('a token for another audience is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { aud: 'another-api' })));
  });

  it('an unsecured token (alg none, empty signature) is refused with 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const payload = {
      ...orgAdminClaims(),
      sub: randomUUID(),
      iss: issuer(),
      aud: audience(),
      iat: now,
      exp: now + 3600,
    };
    const token = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.`;
    expectUnauthenticated(await listOrgs(token));
  });

  it('a token signed with another secret is refused with 401', async () => {
    expectUnauthenticated(
      await listOrgs(
        await sign(orgAdminClaims(), { key: new TextEncoder().encode('another-secret-0123456789abcdef!!') }),
      ),
    );
  });

  it('a token without scope takes the scope its role implies', async () => {
    const { scope: _, ...claims } = orgAdminClaims();
    const reply = await listOrgs(await sign(claims));
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((o: { id: string }) => o.id)).toEqual([a.orgId]);
  });

  it('a token without scope whose role implies organization scope but lacks orgId is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign({ role: 'org_admin', partnerId: a.partnerId })));
  });

  it('a token signed with the right secret but another HMAC algorithm (HS512) is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { alg: 'HS512' })));
  });

  it('a token without exp is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { exp: null })));
  });

  it('a token without sub is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { sub: null })));
  });

  it('a token whose sub is not a UUID is refused with 401', async () => {
    expectUnauthenticated(await listOrgs(await sign(orgAdminClaims(), { sub: 'alice' })));
  });

  it.each([
    ['organization scope without orgId', () => ({ role: 'org_admin', scope: 'organization', partnerId: a.partnerId })],
    [
      'partner scope with an organization role',
      () => ({ role: 'org_admin', scope: 'partner', partnerId: a.partnerId }),
    ],
    ['partner scope without partnerId', () => ({ role: 'partner_admin', scope: 'partner' })],
    [
      'organization scope with a partner role',
      () => ({ role: 'partner_admin', scope: 'organization', partnerId: a.partnerId, orgId: a.orgId }),
    ],
    ['platform scope with a non-platform role', () => ({ role: 'org_admin', scope: 'platform' })],
    ['an unknown role', () => ({ ...orgAdminClaims(), role: 'superuser' })],
    ['an unknown scope', () => ({ ...orgAdminClaims(), scope: 'galaxy' })],
    ['an orgId that is not a UUID', () => ({ ...orgAdminClaims(), orgId: 'acme' })],
  ])('a token with inconsistent claims (%s) is refused with 401', async (_, claims) => {
    expectUnauthenticated(await listOrgs(await sign(claims() as JWTPayload)));
  });

  it('a token naming a permission of another service is accepted, and that permission grants nothing here', async () => {
    const token = await sign({ ...orgAdminClaims(), permissions: ['orgs:read', 'everything'] } as JWTPayload);
    expect((await listOrgs(token)).status).toBe(200);
    expect((await t.api.request('PATCH', `${ORGS}/${a.orgId}`, { token, body: { name: 'Nope' } })).status).toBe(403);
  });

  it('a token whose payload was altered after signing (orgId swapped) is refused with 401', async () => {
    const [header, payload, signature] = (await orgUser(a.partnerId, a.orgId)).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const tampered = `${header}.${b64({ ...claims, orgId: b.orgId, partnerId: b.partnerId })}.${signature}`;
    expectUnauthenticated(await t.api.request('GET', `${ORGS}/${b.orgId}`, { token: tampered }));
  });

  describe('the permissions claim replaces the role defaults', () => {
    it('an org_admin limited to orgs:read cannot change its organization (403)', async () => {
      const token = await orgUser(a.partnerId, a.orgId, 'org_admin', { permissions: ['orgs:read'] });
      const reply = await t.api.request('PATCH', `${ORGS}/${a.orgId}`, { token, body: { name: 'Renamed' } });
      expectError(reply, 403, 'FORBIDDEN');
      const { rows } = await t.db.admin.query('SELECT name FROM organizations WHERE id = :id::uuid', { id: a.orgId });
      expect(rows).toEqual([{ name: 'Alpha Corp' }]);
    });

    it('an org_admin limited to orgs:read can still read its organization (200)', async () => {
      const token = await orgUser(a.partnerId, a.orgId, 'org_admin', { permissions: ['orgs:read'] });
      const reply = await t.api.request('GET', `${ORGS}/${a.orgId}`, { token });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ id: a.orgId, name: 'Alpha Corp' });
    });

    it('an empty permissions list grants nothing, not the role defaults (403)', async () => {
      const token = await orgUser(a.partnerId, a.orgId, 'org_admin', { permissions: [] });
      expectError(await listOrgs(token), 403, 'FORBIDDEN');
      expectError(await t.api.request('GET', `${ORGS}/${a.orgId}/sites`, { token }), 403, 'FORBIDDEN');
      expectError(await t.api.request('GET', `/api/v1/devices`, { token }), 403, 'FORBIDDEN');
    });

    it('an org_viewer granted orgs:write may change its organization', async () => {
      const token = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read', 'orgs:write'] });
      const reply = await t.api.request('PATCH', `${ORGS}/${a.orgId}`, { token, body: { externalId: 'ext-1' } });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ id: a.orgId, externalId: 'ext-1' });
    });
  });
});
