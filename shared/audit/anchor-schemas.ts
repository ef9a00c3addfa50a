import { z } from 'zod';
import { pageQuery, paginationSchema } from '../db/paging.ts';
import { anchorVersion } from './signed-versions.ts';

export const anchorListQuery = z.object({
  orgId: z.uuid().optional().meta({ description: 'Only the anchors of this organization (one the caller may read)' }),
  ...pageQuery({ defaultLimit: 50, maxLimit: 100 }),
});

const checksum = z.string().meta({ description: 'SHA-256, hex' });
export const auditAnchor = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    seq: z.number().int().meta({ description: 'The chain head anchored' }),
    checksum,
    firstRetainedSeq: z
      .number()
      .int()
      .meta({ description: 'The retention boundary: the first position the chain held' }),
    boundaryChecksum: checksum.nullable().meta({
      description:
        "The checksum the row at firstRetainedSeq links to (the latest retention checkpoint's); null without one",
    }),
    orgCount: z.number().int().meta({ description: 'How many organizations had a chain when the anchor was written' }),
    orgsDigest: checksum.meta({
      description: "SHA-256 (hex) of those organizations' ids, sorted, joined by a newline",
    }),
    anchoredAt: z.string(),
    keyId: z
      .string()
      .meta({ description: 'The first 16 hex digits of the SHA-256 of the signing public key (SPKI DER)' }),
    signature: z.string().meta({
      description: `Ed25519 signature (base64) of the canonical payload: '${anchorVersion}', then per field (orgId, seq, checksum, firstRetainedSeq, boundaryChecksum, orgCount, orgsDigest, anchoredAt, keyId) a newline and '~' for null or '<UTF-8 byte length>:<value>'`,
    }),
  })
  .meta({ id: 'AuditAnchor' });

export const auditAnchorPage = z
  .object({
    publicKey: z
      .string()
      .nullable()
      .meta({ description: 'The Ed25519 public key (SPKI PEM) anchors are signed with; null when none is configured' }),
    keyId: z.string().nullable(),
    data: z.array(auditAnchor),
    pagination: paginationSchema,
  })
  .meta({ id: 'AuditAnchorPage' });
