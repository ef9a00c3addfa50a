import { randomInt } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { openSecret, sealSecret } from '#shared/auth/key-seal.ts';

const configured = process.env.ENROLLMENT_KEY_SEAL_KEY;
afterEach(() => {
  process.env.ENROLLMENT_KEY_SEAL_KEY = configured;
});

/** What Secrets Manager generates for the CDK stack's seal (infra/aws/logbook-stack.ts): 43 letters and digits. */
const generated = () => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length: 43 }, () => alphabet[randomInt(alphabet.length)]).join('');
};

describe('enrollment-key seal', () => {
  it('takes the value the CDK stack generates as its key: sealed keys open under it, not under another', () => {
    process.env.ENROLLMENT_KEY_SEAL_KEY = generated();
    const sealed = sealSecret('lbk_enrollment-key');
    expect(sealed).toMatch(/^v1\./);
    expect(openSecret(sealed)).toBe('lbk_enrollment-key');
    process.env.ENROLLMENT_KEY_SEAL_KEY = generated();
    expect(openSecret(sealed)).toBeUndefined();
  });

  it('refuses a key that is not 32 bytes, and seals nothing without one', () => {
    process.env.ENROLLMENT_KEY_SEAL_KEY = 'c2hvcnQ=';
    expect(() => sealSecret('x')).toThrow(/32 bytes/);
    process.env.ENROLLMENT_KEY_SEAL_KEY = '';
    expect(sealSecret('x')).toBeNull();
  });
});
