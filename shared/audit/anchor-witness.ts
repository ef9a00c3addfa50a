/**
 * The outside witness of signed anchors (docs/audit-streaming.md "The outside witness"): every anchor the integrity
 * watch signs is also published where the database cannot rewrite it, and the watch compares each chain with what
 * was witnessed before anchoring it again. Audit streaming provides the witness (a directory, or an S3 bucket with
 * Object Lock); the composition layer registers it here, so this domain knows none.
 */
import type { Db } from '../db/db.ts';
import type { Anchor } from './anchor-store.ts';

/** What a witness catches that the chain alone cannot: kinds reported by the watch and by `npm run audit:verify`. */
export const witnessBreakKinds = [
  'organization-wiped',
  'head-rolled-back',
  'tail-truncated',
  'head-not-extending',
  'witness-signature',
] as const;
export type WitnessBreakKind = (typeof witnessBreakKinds)[number];

export const witnessBreakMeaning: Record<WitnessBreakKind, string> = {
  'organization-wiped': 'the witness holds anchors of the organization, and the database holds no chain of it',
  'head-rolled-back': 'the chain head is below the newest witnessed anchor: rows written before it were cut',
  'tail-truncated': 'the rows up to the newest witnessed anchor are gone, though the head still claims them',
  'head-not-extending':
    'the row at a witnessed anchor carries another checksum: the chain was rewritten, and its head does not extend what was witnessed',
  'witness-signature': 'a witnessed anchor does not carry a valid signature of the anchor key',
};

export interface WitnessBreak {
  orgId: string;
  seq: number;
  kind: WitnessBreakKind;
}

export interface AnchorWitness {
  /** Where the witness is, for reports (`.data/witness`, `s3://bucket/prefix`). */
  location: string;
  /** Publishes a signed anchor; throws when the witness did not take it. */
  publish(anchor: Anchor): Promise<void>;
  /** The organizations the witness holds anchors of. */
  organizations(): Promise<string[]>;
  /** What the organization's chain contradicts in its witnessed anchors, or undefined. */
  contradiction(db: Db, orgId: string): Promise<WitnessBreak | undefined>;
}

let registered: AnchorWitness | undefined;

/** Registers the witness the integrity watch publishes to (none: anchors stay in the database only). */
export function useAnchorWitness(witness: AnchorWitness | undefined): void {
  registered = witness;
}

export const anchorWitness = (): AnchorWitness | undefined => registered;
