import { randomUUID } from 'node:crypto';
import { generateKeyPair, SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { signUserToken } from '#infra/local/tokens.ts';
import { resetJwtVerifier, verifyUserToken } from '#shared/auth/jwt.ts';
import { DomainError } from '#shared/errors.ts';

const partnerId = randomUUID();
const orgId = randomUUID();

afterEach(() => {
  delete process.env.JWT_JWKS_URL;
  resetJwtVerifier();
});

describe('a user token', () => {
  it('cannot claim a permission beyond its scope', async () => {
    const token = await signUserToken({
      sub: randomUUID(),
      role: 'org_viewer',
      partnerId,
      orgId,
      permissions: ['partners:manage', 'orgs:read'],
    });
    const principal = await verifyUserToken(token);
    expect([...principal.permissions]).toEqual(['orgs:read']);
  });

  it("keeps a platform administrator's claimed partners:manage", async () => {
    const principal = await verifyUserToken(
      await signUserToken({ sub: randomUUID(), role: 'platform_admin', permissions: ['partners:manage'] }),
    );
    expect([...principal.permissions]).toEqual(['partners:manage']);
  });

  it('ignores permissions of other services instead of rejecting the token', async () => {
    const token = await signUserToken({
      sub: randomUUID(),
      role: 'partner_admin',
      partnerId,
      permissions: ['orgs:read', 'invoices:write'],
    });
    expect([...(await verifyUserToken(token)).permissions]).toEqual(['orgs:read']);
  });

  it("is reported unavailable (503), not invalid, when the identity provider's keys cannot be fetched", async () => {
    process.env.JWT_JWKS_URL = 'http://127.0.0.1:9/.well-known/jwks.json';
    resetJwtVerifier();
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({ role: 'platform_admin' })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setSubject(randomUUID())
      .setIssuer('logbook-local')
      .setAudience('logbook')
      .setExpirationTime('1h')
      .sign(privateKey);
    const error = await verifyUserToken(token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('UNAVAILABLE');
  });
});
