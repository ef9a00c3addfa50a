import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Enrollment keys sealed for their deployment scripts: an MSP downloads a key's script whenever it
 * schedules a job, long after the key was shown once, so the key is kept recoverable, AES-256-GCM under
 * ENROLLMENT_KEY_SEAL_KEY (32 bytes, base64), never in the clear. Without that setting keys are not sealed and their
 * scripts carry a placeholder. The hash stays what enrollment checks. The same seal keeps the other secrets the service
 * must use later but never show: PSA integration secrets and secret script parameters' defaults.
 */
function sealKey(): Buffer | undefined {
  const text = process.env.ENROLLMENT_KEY_SEAL_KEY;
  if (!text) return undefined;
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error('ENROLLMENT_KEY_SEAL_KEY must be 32 bytes, base64');
  return key;
}

/** `v1.<iv>.<tag>.<ciphertext>` (base64url), or null without a seal key. */
export function sealSecret(secret: string): string | null {
  const key = sealKey();
  if (!key) return null;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), sealed]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/** The sealed secret, or undefined when it cannot be opened (no seal key, another seal key, or tampered). */
export function openSecret(sealed: string | null): string | undefined {
  const key = sealKey();
  const [version, iv, tag, text] = sealed?.split('.') ?? [];
  if (!key || version !== 'v1' || !iv || !tag || !text) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(text, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
