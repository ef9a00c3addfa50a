import type { Db } from '../db/db.ts';

export type OrgRecord = {
  id: string;
  name: string;
  externalId: string | null;
  sourceSystem: string | null;
};

/** The partner's live organizations with their live sites' names: a tenancy tree is small enough to read whole. */
export async function selectPartnerTree(db: Db, partnerId: string) {
  const { rows } = await db.query<OrgRecord & { sites: { id: string; name: string }[] }>(
    `SELECT o.id, o.name, o.external_id AS "externalId", o.source_system AS "sourceSystem",
            coalesce((SELECT json_agg(json_build_object('id', s.id, 'name', s.name)) FROM sites s
                       WHERE s.org_id = o.id AND s.deleted_at IS NULL), '[]') AS sites
       FROM organizations o WHERE o.partner_id = :partnerId::uuid AND o.deleted_at IS NULL`,
    { partnerId },
  );
  return rows;
}

export async function linkOrganization(tx: Db, orgId: string, sourceSystem: string, externalId: string) {
  await tx.query(
    'UPDATE organizations SET source_system = :sourceSystem::text, external_id = :externalId::text, updated_at = now() WHERE id = :orgId::uuid',
    { orgId, sourceSystem, externalId },
  );
}

export async function setSourceSystem(tx: Db, orgId: string, sourceSystem: string) {
  await tx.query('UPDATE organizations SET source_system = :sourceSystem::text WHERE id = :orgId::uuid', {
    orgId,
    sourceSystem,
  });
}
