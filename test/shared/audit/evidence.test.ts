import { describe, expect, it } from 'vitest';
import { anchorKeyId, type CheckpointFields, generateAnchorKey, signCheckpoint } from '#shared/audit/anchor-signing.ts';
import { anchorsDeletedBreak, checkpointBreak } from '#shared/audit/evidence.ts';
import type { CheckpointRecord } from '#shared/audit/store.ts';

const key = generateAnchorKey();
const orgId = '6f1c2a8e-3b4d-4c5e-8f90-123456789abc';

/** A checkpoint the worker signed with `signer`, from `fields` over a cut of rows older than 30 days. */
function signed(fields: Partial<CheckpointFields> = {}, signer = key): CheckpointRecord {
  const all: CheckpointFields = {
    orgId,
    seq: 20,
    checksum: 'c'.repeat(64),
    lastTimestamp: '2026-01-01T00:00:00.000000Z',
    retentionDays: 30,
    asOf: '2026-03-01T00:00:00.000Z',
    anchored: false,
    keyId: anchorKeyId(signer),
    ...fields,
  };
  const { orgId: _, seq, checksum, ...rest } = all;
  return { seq, checksum, signed: { ...rest, signature: signCheckpoint(all, signer) } };
}

describe('signed retention checkpoints', () => {
  it('accepts a cut the worker signed over rows older than its policy allowed', () => {
    expect(checkpointBreak(orgId, signed(), key)).toBeUndefined();
  });

  it('refuses a checkpoint without a signature, as a superuser would insert it', () => {
    expect(checkpointBreak(orgId, { seq: 20, checksum: 'c'.repeat(64), signed: null }, key)).toEqual({
      seq: 20,
      id: null,
      kind: 'checkpoint',
    });
  });

  it('refuses a signature by another key, or over other values', () => {
    expect(checkpointBreak(orgId, signed({}, generateAnchorKey()), key)?.kind).toBe('checkpoint');
    expect(checkpointBreak(orgId, { ...signed(), checksum: 'd'.repeat(64) }, key)?.kind).toBe('checkpoint');
    expect(checkpointBreak(orgId, { ...signed(), seq: 21 }, key)?.kind).toBe('checkpoint');
    expect(checkpointBreak('00000000-0000-0000-0000-000000000001', signed(), key)?.kind).toBe('checkpoint');
  });

  it('refuses a cut whose last deleted row was younger than the policy allowed at the time', () => {
    // asOf − 30 days is 2026-01-30T00:00:00Z: a row of that instant was inside the window.
    expect(checkpointBreak(orgId, signed({ lastTimestamp: '2026-01-30T00:00:00.000000Z' }), key)?.kind).toBe(
      'checkpoint',
    );
    expect(checkpointBreak(orgId, signed({ lastTimestamp: '2026-01-29T23:59:59.999999Z' }), key)).toBeUndefined();
  });

  it('reports anchors gone when the chain or the signed checkpoint says the organization was anchored', () => {
    expect(anchorsDeletedBreak(undefined, 7, undefined)).toEqual({ seq: 7, id: null, kind: 'anchor' });
    expect(anchorsDeletedBreak(undefined, undefined, signed({ anchored: true }))).toEqual({
      seq: 20,
      id: null,
      kind: 'anchor',
    });
    expect(anchorsDeletedBreak(undefined, undefined, signed())).toBeUndefined();
    expect(anchorsDeletedBreak({}, 7, undefined)).toBeUndefined();
  });
});
