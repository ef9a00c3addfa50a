import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { generateAnchorKey, publicKeyPem } from '#shared/audit/anchor-signing.ts';
import { runRetention } from '#shared/audit/retention.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import type { TestDatabase } from './database.ts';

/**
 * Registers the hooks of a file that runs the daily retention run and checks its signed anchors: before all, a fresh
 * anchor key configured (AUDIT_ANCHOR_PRIVATE_KEY, whose public half the API checks signatures with), a connection as
 * the retention role, and a temporary directory holding the key's public half (`anchor-public.pem`); after all, all
 * of it undone. Call it before the file's own beforeAll, which then runs after these.
 */
export function useAnchorSigning(t: { readonly db: TestDatabase }, name: string) {
  const key = generateAnchorKey();
  const previousKey = process.env.AUDIT_ANCHOR_PRIVATE_KEY;
  let auditAdmin: Db | undefined;
  let dir: string | undefined;
  beforeAll(() => {
    process.env.AUDIT_ANCHOR_PRIVATE_KEY = key.export({ type: 'pkcs8', format: 'pem' }).toString();
    auditAdmin = createPgDb({ connectionString: t.db.urls.auditAdmin, max: 1 });
    dir = mkdtempSync(join(tmpdir(), `logbook-${name}-`));
    writeFileSync(join(dir, 'anchor-public.pem'), publicKeyPem(key));
  });
  afterAll(async () => {
    await auditAdmin?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (previousKey === undefined) delete process.env.AUDIT_ANCHOR_PRIVATE_KEY;
    else process.env.AUDIT_ANCHOR_PRIVATE_KEY = previousKey;
  });
  return {
    key,
    get auditAdmin() {
      return auditAdmin!;
    },
    get dir() {
      return dir!;
    },
    get publicKeyFile() {
      return join(dir!, 'anchor-public.pem');
    },
    /** The daily retention run, signing with the key. */
    daily: () => runRetention(auditAdmin!, { anchorKey: key }),
  };
}
