/**
 * The first partner of a new deployment and its administrator, created once: `npm run bootstrap` runs it locally
 * and, with the owner's secret through the Data API, against a deployed stack. A second run finds both and
 * changes nothing. No organization exists yet, so there is no trail to audit into (trails are per organization):
 * the audited users API takes over from the first organization on.
 */

import type { UserRow } from '../auth/user-schemas.ts';
import { insertUser, selectUserByEmail } from '../auth/user-store.ts';
import { type Db, one } from '../db/db.ts';
import { Conflict } from '../errors.ts';
import { insertPartner } from './store.ts';

export interface Bootstrapped {
  partner: { id: string; name: string };
  partnerCreated: boolean;
  admin: UserRow;
  adminCreated: boolean;
}

export function bootstrapPartner(
  db: Db,
  input: { partnerName: string; adminEmail: string; adminName?: string },
): Promise<Bootstrapped> {
  return db.transaction(async (tx) => {
    // Two runs at once (a retried CI job) wait for each other instead of creating the partner twice.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('logbook.bootstrap'))`);
    const found = await one<{ id: string; name: string }>(
      tx,
      `SELECT id, name FROM partners WHERE lower(name) = lower(:name::text) ORDER BY created_at, id LIMIT 1`,
      { name: input.partnerName },
    );
    const partner = found ?? (await insertPartner(tx, input.partnerName));
    const existing = await selectUserByEmail(tx, input.adminEmail);
    if (existing && (existing.partnerId !== partner.id || existing.role !== 'partner_admin'))
      throw Conflict(`${input.adminEmail} is already a user, but not this partner's administrator`);
    const admin =
      existing ??
      (await insertUser(tx, {
        partnerId: partner.id,
        orgId: null,
        email: input.adminEmail.toLowerCase(),
        name: input.adminName ?? null,
        role: 'partner_admin',
        createdBy: null,
      }))!;
    return {
      partner: { id: partner.id, name: partner.name },
      partnerCreated: !found,
      admin,
      adminCreated: !existing,
    };
  });
}
