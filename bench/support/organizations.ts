import type { Db } from '#shared/db/db.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';

/** A partner and `count` organizations of it (`Customer 0`, …), each with one site: the tenants a fleet is loaded into. */
export async function insertBenchOrganizations(
  admin: Db,
  count: number,
): Promise<{ partnerId: string; orgIds: string[] }> {
  const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
  const orgIds: string[] = [];
  for (let i = 0; i < count; i++)
    orgIds.push(
      (await insertOrganizationWithSite(admin, { partnerId: partner.id, name: `Customer ${i}` }, { name: 'HQ' })).id,
    );
  return { partnerId: partner.id, orgIds };
}
