import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearerToken } from '#shared/auth/authenticate.ts';
import { hashSecret, newSecret, sameSecret, secretPrefixes, shownPart } from '#shared/auth/secrets.ts';

describe('secrets', () => {
  it('a new secret is its prefix followed by 32 random bytes in base64url', () => {
    const secret = newSecret(secretPrefixes.apiKey);
    expect(secret).toMatch(/^lbk_[A-Za-z0-9_-]{43}$/);
    expect(newSecret(secretPrefixes.apiKey)).not.toBe(secret);
  });

  it('each kind of secret has its own recognizable prefix', () => {
    expect(secretPrefixes).toEqual({ apiKey: 'lbk_', enrollmentKey: 'lbe_', agentToken: 'lba_' });
  });

  it('a secret is hashed as lowercase hex SHA-256 of its UTF-8 text', () => {
    expect(hashSecret('lbk_abc')).toBe(createHash('sha256').update('lbk_abc', 'utf8').digest('hex'));
    expect(hashSecret('lbk_abc')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('only the first 12 characters of a secret are shown in lists', () => {
    const secret = newSecret(secretPrefixes.enrollmentKey);
    expect(shownPart(secret)).toBe(secret.slice(0, 12));
    expect(shownPart(secret)).toHaveLength(12);
  });

  it('sameSecret tells equal from different secrets, whatever their lengths', () => {
    expect(sameSecret('fleet-secret', 'fleet-secret')).toBe(true);
    expect(sameSecret('fleet-secret', 'fleet-secreT')).toBe(false);
    expect(sameSecret('', 'fleet-secret')).toBe(false);
    expect(sameSecret('fleet-secret-longer', 'fleet-secret')).toBe(false);
  });
});

describe('bearerToken', () => {
  it('reads the token of a Bearer Authorization header, case-insensitively', () => {
    expect(bearerToken({ authorization: 'Bearer abc.def.ghi' })).toBe('abc.def.ghi');
    expect(bearerToken({ authorization: 'bearer abc' })).toBe('abc');
  });

  it('returns nothing for a missing header, another scheme, or a bearer without token', () => {
    expect(bearerToken({})).toBeUndefined();
    expect(bearerToken({ authorization: 'Basic dTpw' })).toBeUndefined();
    expect(bearerToken({ authorization: 'Bearer ' })).toBeUndefined();
    expect(bearerToken({ authorization: 'Bearer a b' })).toBeUndefined();
  });
});
