import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Prefixes make each kind of secret recognizable (and findable by secret scanners). */
export const secretPrefixes = { apiKey: 'lbk_', enrollmentKey: 'lbe_', agentToken: 'lba_' } as const;

/** How much of a secret stays readable in lists, to tell keys apart (`lbk_AbCdEfGh`). */
export const shownPart = (secret: string) => secret.slice(0, 12);

/** A new random secret: prefix + 32 random bytes, base64url. */
export function newSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

const base64url = /^[A-Za-z0-9_-]+$/;

/**
 * Whether `value` could be a secret of `prefix` that newSecret made (the prefix, then 43 base64url characters): one of
 * any other shape is refused without a database lookup, so garbage credentials never resume a paused Aurora.
 */
export function isSecretShaped(value: string, prefix: string): boolean {
  return value.length === prefix.length + 43 && value.startsWith(prefix) && base64url.test(value.slice(prefix.length));
}

/** Secrets are stored as SHA-256 hex: they are 256-bit random, so no slow hash is needed. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Compares two strings in time independent of where they differ. */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
