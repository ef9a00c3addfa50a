import { randomUUID } from 'node:crypto';
import { hashSecret, newSecret, secretPrefixes, shownPart } from '#shared/auth/secrets.ts';
import type { Db } from '#shared/db/db.ts';
import { insertEnrollmentKey } from '#shared/hierarchy/store.ts';

/** A fleet enrollment key of the organization (usage cap 100,000) that a benchmark's agents enroll with. */
export async function insertFleetKey(admin: Db, orgId: string): Promise<string> {
  const key = newSecret(secretPrefixes.enrollmentKey);
  await insertEnrollmentKey(admin, {
    orgId,
    siteId: null,
    name: 'bench',
    keyHash: hashSecret(key),
    keyPrefix: shownPart(key),
    expiresAt: null,
    createdBy: randomUUID(),
    maxUsage: 100_000,
  });
  return key;
}
