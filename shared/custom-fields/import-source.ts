import { createHash } from 'node:crypto';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { csvRecords, withoutBlanks } from '../imports/csv.ts';
import { fieldsWrite } from './definitions.ts';

/**
 * The records of an import request, from JSON rows or CSV (every cell a string), blank cells and blank strings
 * absent, with the columns the file has and its SHA-256.
 */
export function importRecords(input: { rows?: Record<string, unknown>[]; csv?: string }, maxRows: number) {
  const sha256 = createHash('sha256')
    .update(input.csv ?? JSON.stringify(input.rows))
    .digest('hex');
  if (input.rows)
    return {
      header: [...new Set(input.rows.flatMap((row) => Object.keys(row)))],
      records: input.rows.map(withoutBlanks),
      sha256,
    };
  return { ...csvRecords(input.csv!, maxRows), sha256 };
}

/**
 * The partner an import writes to (imported device-level fields are partner-wide): partner users their
 * own, platform administrators the one they name; organization users only when the import names their
 * organization (values) — never partner-wide definitions.
 */
export async function importPartner(
  db: Db,
  principal: Principal,
  input: { partnerId?: string; orgId?: string },
  allowOrganization: boolean,
) {
  if (input.orgId) {
    const org = await reachableOrganization(db, principal, input.orgId, fieldsWrite);
    return { partnerId: org.partnerId, orgId: org.id as string | undefined };
  }
  requirePermission(principal, fieldsWrite);
  if (principal.scope === 'organization') {
    if (allowOrganization) return { partnerId: principal.partnerId!, orgId: principal.orgId! };
    throw Forbidden('Only partner users import partner-wide custom fields');
  }
  if (principal.scope === 'partner') {
    if (input.partnerId && input.partnerId !== principal.partnerId) throw NotFound('Partner');
    return { partnerId: principal.partnerId!, orgId: undefined };
  }
  if (!input.partnerId)
    throw ValidationFailed('partnerId is required', [
      { path: 'body.partnerId', message: 'Platform administrators name the partner', code: 'invalid_type' },
    ]);
  return { partnerId: input.partnerId, orgId: undefined };
}
