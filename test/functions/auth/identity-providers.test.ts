import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetJwtVerifier } from '#shared/auth/jwt.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

/**
 * Tokens in the shapes Entra ID, Okta and Auth0 issue them, signed by a local JWKS server, with the claim-name
 * settings of docs/operations.md ("Identity") for each.
 */
const t = useApi();
let tenant: Tenant;
let jwks: Server;
let jwksUrl: string;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
const kid = 'provider-key-1';

const settingNames = [
  'JWT_JWKS_URL',
  'JWT_SECRET',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
  'JWT_CLAIM_ROLE',
  'JWT_CLAIM_PARTNER_ID',
  'JWT_CLAIM_ORG_IDS',
  'JWT_CLAIM_SCOPE',
  'JWT_CLAIM_USER_ID',
] as const;
const saved = Object.fromEntries(settingNames.map((name) => [name, process.env[name]]));

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Identity');
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  const key = { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' };
  jwks = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [key] }));
  });
  await new Promise<void>((listening) => jwks.listen(0, '127.0.0.1', listening));
  jwksUrl = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/discovery/v2.0/keys`;
});

afterAll(async () => {
  for (const name of settingNames) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  resetJwtVerifier();
  await new Promise((closed) => jwks?.close(closed));
});

interface Provider {
  name: string;
  issuer: string;
  audience: string;
  settings: Partial<Record<(typeof settingNames)[number], string>>;
  /** A partner administrator's and an organization viewer's claims, as the provider puts them in its tokens. */
  partnerAdmin(): JWTPayload;
  orgViewer(): JWTPayload;
}

const providers: Provider[] = [
  {
    // App roles arrive in `roles`; the ids in directory extension attributes; the user's object id in `oid`.
    name: 'Entra ID',
    issuer: 'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0',
    audience: 'api://logbook',
    settings: {
      JWT_CLAIM_ROLE: 'roles',
      JWT_CLAIM_PARTNER_ID: 'extn.logbookPartnerId',
      JWT_CLAIM_ORG_IDS: 'extn.logbookOrgId',
      JWT_CLAIM_USER_ID: 'oid',
    },
    partnerAdmin: () => ({
      sub: 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ',
      oid: randomUUID(),
      roles: ['partner_admin'],
      'extn.logbookPartnerId': tenant.partnerId,
      preferred_username: 'ada@msp.example',
    }),
    orgViewer: () => ({
      sub: 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaR',
      oid: randomUUID(),
      roles: ['org_viewer'],
      'extn.logbookPartnerId': tenant.partnerId,
      'extn.logbookOrgId': tenant.orgId,
    }),
  },
  {
    // A custom authorization server: groups named after the roles, profile attributes as custom claims.
    name: 'Okta',
    issuer: 'https://msp.okta.com/oauth2/default',
    audience: 'api://logbook',
    settings: {
      JWT_CLAIM_ROLE: 'groups',
      JWT_CLAIM_PARTNER_ID: 'logbookPartnerId',
      JWT_CLAIM_ORG_IDS: 'logbookOrgIds',
      JWT_CLAIM_USER_ID: 'logbookUserId',
    },
    partnerAdmin: () => ({
      sub: 'ada@msp.example',
      uid: '00u1a2b3c4d5e6f7g8h9',
      scp: ['openid', 'profile'],
      groups: ['Everyone', 'partner_admin'],
      logbookPartnerId: tenant.partnerId,
      logbookUserId: randomUUID(),
    }),
    orgViewer: () => ({
      sub: 'bob@msp.example',
      groups: ['Everyone', 'org_viewer'],
      logbookPartnerId: tenant.partnerId,
      logbookOrgIds: [tenant.orgId],
      logbookUserId: randomUUID(),
    }),
  },
  {
    // A post-login Action sets namespaced claims from app_metadata; `scope` stays OAuth's.
    name: 'Auth0',
    issuer: 'https://msp.eu.auth0.com/',
    audience: 'https://api.logbook.example',
    settings: {
      JWT_CLAIM_ROLE: 'https://logbook.example/role',
      JWT_CLAIM_PARTNER_ID: 'https://logbook.example/partnerId',
      JWT_CLAIM_ORG_IDS: 'https://logbook.example/orgIds',
      JWT_CLAIM_SCOPE: 'https://logbook.example/scope',
      JWT_CLAIM_USER_ID: 'https://logbook.example/userId',
    },
    partnerAdmin: () => ({
      sub: 'auth0|65f1c0ffee',
      scope: 'openid profile email',
      'https://logbook.example/role': 'partner_admin',
      'https://logbook.example/partnerId': tenant.partnerId,
      'https://logbook.example/userId': randomUUID(),
    }),
    orgViewer: () => ({
      sub: 'auth0|65f1c0ffef',
      scope: 'openid profile email',
      'https://logbook.example/role': 'org_viewer',
      'https://logbook.example/partnerId': tenant.partnerId,
      'https://logbook.example/orgIds': [tenant.orgId],
      'https://logbook.example/userId': randomUUID(),
    }),
  },
];

const sign = (provider: Provider, claims: JWTPayload) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
    .setIssuer(provider.issuer)
    .setAudience(provider.audience)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);

const organizations = (token: string) => t.api.request('GET', '/api/v1/orgs/organizations', { token });

describe.each(providers)('tokens of $name', (provider) => {
  beforeAll(() => {
    for (const name of settingNames) delete process.env[name];
    Object.assign(process.env, {
      JWT_JWKS_URL: jwksUrl,
      JWT_ISSUER: provider.issuer,
      JWT_AUDIENCE: provider.audience,
      ...provider.settings,
    });
    resetJwtVerifier();
  });

  it("sign in a partner administrator, who sees the partner's organizations", async () => {
    const reply = await organizations(await sign(provider, provider.partnerAdmin()));
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((org: { id: string }) => org.id)).toEqual([tenant.orgId]);
  });

  it('sign in an organization viewer, who may read but not change', async () => {
    const token = await sign(provider, provider.orgViewer());
    const reply = await organizations(token);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((org: { id: string }) => org.id)).toEqual([tenant.orgId]);
    const change = await t.api.request('POST', '/api/v1/orgs/organizations', { token, body: { name: 'No' } });
    expect(change.status).toBe(403);
  });

  it('refuse the same claims under names the settings do not give (401)', async () => {
    const { orgId, partnerId } = tenant;
    const reply = await organizations(
      await sign(provider, { sub: randomUUID(), role: 'org_admin', scope: 'organization', partnerId, orgId }),
    );
    expect(reply.status).toBe(401);
  });

  it('refuse a token naming two organizations for one organization role (401)', async () => {
    const claims = provider.orgViewer();
    const orgClaim = provider.settings.JWT_CLAIM_ORG_IDS!;
    const reply = await organizations(await sign(provider, { ...claims, [orgClaim]: [tenant.orgId, randomUUID()] }));
    expect(reply.status).toBe(401);
  });
});
