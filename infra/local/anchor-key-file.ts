import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { generateAnchorKey } from '#shared/audit/anchor-signing.ts';

/** The local signing key of the integrity watch, shared by `npm start` and `npm run retention`. */
export const localAnchorKeyFile = '.data/anchor-key.pem';

/** Locally: the key kept in `file` (PKCS#8 PEM), generated there on first use (mode 0600). Returns the PEM. */
export function localAnchorKeyPem(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8');
  mkdirSync(dirname(file), { recursive: true });
  const pem = generateAnchorKey().export({ type: 'pkcs8', format: 'pem' }).toString();
  writeFileSync(file, pem, { mode: 0o600 });
  return pem;
}
