import { changedFields } from '../audit/changes.ts';
import { auditPartnerChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { requireBilling } from './contracts.ts';
import * as store from './store.ts';

type ProfileChange = { name?: string | null; address?: string | null; logo?: string | null; taxId?: string | null };

/** A partner's own users (and the platform's) reach its profile; anyone else gets a 404. */
async function reachablePartner(db: Db, principal: Principal, partnerId: string) {
  const mine = principal.scope === 'platform' || (principal.scope === 'partner' && principal.partnerId === partnerId);
  const partner = mine ? await store.selectPartnerName(db, partnerId) : undefined;
  if (!partner) throw NotFound('Partner');
  return partner;
}

/**
 * The name, address, logo and tax id the partner's invoices show (billing:manage). Audited as
 * billing_profile.update in the trail of each of the partner's organizations, the logo as its size only.
 */
export async function updateBillingProfile(
  db: Db,
  principal: Principal,
  partnerId: string,
  change: ProfileChange,
  audit: AuditContext,
) {
  const partner = await reachablePartner(db, principal, partnerId);
  requireBilling(principal, 'manage');
  return db.transaction(async (tx) => {
    const before = await store.selectBillingProfile(tx, partnerId);
    const after = await store.upsertBillingProfile(tx, partnerId, change);
    const shown = (p: ProfileChange | undefined) => ({
      name: p?.name ?? null,
      address: p?.address ?? null,
      taxId: p?.taxId ?? null,
      logoBytes: p?.logo ? Math.floor((p.logo.length - p.logo.indexOf(',') - 1) * 0.75) : null,
    });
    await auditPartnerChange(tx, audit, partnerId, {
      action: 'billing_profile.update',
      resourceType: 'partner',
      resourceId: partnerId,
      resourceName: partner.name,
      details: changedFields(shown(before), shown(after), ['name', 'address', 'taxId', 'logoBytes']),
    });
    return after;
  });
}

/** What an invoice's PDF names as its issuer: the profile, or the partner's name when it has none. */
export async function issuerOf(db: Db, partnerId: string) {
  const [profile, partner] = await Promise.all([
    store.selectBillingProfile(db, partnerId),
    store.selectPartnerName(db, partnerId),
  ]);
  return {
    name: profile?.name ?? partner?.name ?? '',
    address: profile?.address ?? null,
    logo: profile?.logo ?? null,
    taxId: profile?.taxId ?? null,
  };
}
