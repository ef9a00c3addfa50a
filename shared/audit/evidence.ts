/**
 * The signed evidence a chain is checked against, pure so that the database verifier and the offline check
 * of an export apply the same rules: the retention checkpoint at the chain's start must be signed by the retention
 * worker over rows older than its policy allowed, the newest signed anchor must still hold, and an organization whose
 * chain (or signed checkpoint) records that it was anchored must still have anchors.
 */
import type { KeyObject } from 'node:crypto';
import { type AnchorFields, verifyAnchorSignature, verifyCheckpointSignature } from './anchor-signing.ts';
import type { ChainBreak } from './chain-break.ts';
import type { ChainLink, CheckpointRecord } from './store.ts';

const dayMs = 86_400_000;

/** The retention boundary's checkpoint is a signed cut of rows older than the policy allowed; the break when not. */
export function checkpointBreak(
  orgId: string,
  checkpoint: CheckpointRecord,
  publicKey: KeyObject | undefined,
): ChainBreak | undefined {
  const refused: ChainBreak = { seq: checkpoint.seq, id: null, kind: 'checkpoint' };
  const { signed } = checkpoint;
  if (!signed) return refused;
  if (
    publicKey &&
    !verifyCheckpointSignature({ orgId, seq: checkpoint.seq, checksum: checkpoint.checksum, ...signed }, publicKey)
  )
    return refused;
  // Only rows timestamped before asOf − retentionDays may go; the cutoff has whole milliseconds.
  const lastMs = Date.parse(`${signed.lastTimestamp.slice(0, 23)}Z`);
  const allowedBefore = Date.parse(signed.asOf) - signed.retentionDays * dayMs;
  if (!(lastMs < allowedBefore)) return refused;
  return undefined;
}

/** What the chain holds where an anchor looks: its head, its boundary and its row at the anchored seq. */
export interface AnchorView {
  head: ChainLink | undefined;
  checkpoint: ChainLink | undefined;
  /** The retained row at the anchor's seq (null: none); 'unknown' when the reader cannot tell (a partial export). */
  anchoredRow: { id: string; checksum: string } | null | 'unknown';
}

/**
 * Whether the chain still holds what a signed anchor recorded; the break when not. A chain rewritten with recomputed
 * checksums, or rolled back below the anchor, verifies on its own, but not against an anchor signed before.
 */
export function anchorBreak(
  orgId: string,
  anchor: AnchorFields & { signature: string },
  view: AnchorView,
  publicKey: KeyObject | undefined,
): ChainBreak | undefined {
  const refused = (seq: number, id: string | null = null): ChainBreak => ({ seq, id, kind: 'anchor' });
  if (anchor.orgId !== orgId || (publicKey && !verifyAnchorSignature(anchor, publicKey))) return refused(anchor.seq);
  const { head, checkpoint, anchoredRow } = view;
  // The head never moves back: below the anchor, the tail was truncated (or the head rolled back).
  if (!head || head.seq < anchor.seq) return refused((head?.seq ?? 0) + 1);
  const start = (checkpoint?.seq ?? 0) + 1;
  // Retention only moves the boundary forward: positions before the anchor's boundary cannot be held again.
  if (start < anchor.firstRetainedSeq) return refused(start);
  if (anchor.seq >= start) {
    if (anchoredRow === 'unknown') return undefined;
    return anchoredRow?.checksum === anchor.checksum ? undefined : refused(anchor.seq, anchoredRow?.id ?? null);
  }
  // Pruned since: the checkpoint of the cut that passed the anchor's position is the only trace of its row.
  if (checkpoint && checkpoint.seq === anchor.seq && checkpoint.checksum !== anchor.checksum)
    return refused(anchor.seq);
  return undefined;
}

/**
 * Anchors that existed and are gone: the chain's record of the organization's first anchor (its seq), or the signed
 * boundary checkpoint, says it was anchored, yet no anchor is left.
 */
export function anchorsDeletedBreak(
  anchor: unknown,
  anchoredRecordSeq: number | undefined,
  checkpoint: CheckpointRecord | undefined,
): ChainBreak | undefined {
  if (anchor) return undefined;
  if (anchoredRecordSeq !== undefined) return { seq: anchoredRecordSeq, id: null, kind: 'anchor' };
  if (checkpoint?.signed?.anchored) return { seq: checkpoint.seq, id: null, kind: 'anchor' };
  return undefined;
}
