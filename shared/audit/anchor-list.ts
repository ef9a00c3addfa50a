import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { pagination } from '../db/paging.ts';
import type { anchorListQuery } from './anchor-schemas.ts';
import { anchorKeyId, configuredAnchorPublicKey, publicKeyPem } from './anchor-signing.ts';
import { countAnchors, selectAnchors } from './anchor-store.ts';
import { auditScope } from './read-store.ts';

/**
 * GET /audit-logs/anchors: the signed anchors of the organizations the caller may read (audit:read, tenant-scoped as
 * the trail; orgId narrows; soft-deleted organizations included), newest first, with the published public key, so a
 * customer can keep copies and verify the chain against them later.
 */
export async function listAuditAnchors(db: Db, principal: Principal, query: z.infer<typeof anchorListQuery>) {
  requirePermission(principal, 'audit:read');
  const scope = auditScope(principal, { orgId: query.orgId });
  const rows = await selectAnchors(db, scope, { offset: (query.page - 1) * query.limit, limit: query.limit });
  const total = await countAnchors(db, scope);
  const key = configuredAnchorPublicKey();
  return {
    publicKey: key ? publicKeyPem(key) : null,
    keyId: key ? anchorKeyId(key) : null,
    data: rows,
    pagination: pagination(query.page, query.limit, total),
  };
}
