/** The breaks of an audit chain, named and worded once for every verifier (API, CLI, daily watch, offline check). */

/** The kinds of break every verifier reports (the API, `npm run audit:verify`, the daily integrity watch). */
export const chainBreakKinds = [
  'altered',
  'missing',
  'inserted',
  'link',
  'checkpoint',
  'anchor',
  'organization-missing',
] as const;
export type ChainBreakKind = (typeof chainBreakKinds)[number];

/** What each kind means, in the same words wherever a break is reported. */
export const chainBreakMeaning: Record<ChainBreakKind, string> = {
  altered: "the row's values do not match its checksum",
  missing: 'no row holds this position of the chain',
  inserted:
    'the chain never sealed a row here: past its head, before its retained start, a second row at one position, or at no position (seq 0)',
  link: "the row's prevChecksum (or the chain head) does not point at the row before it",
  checkpoint:
    'the retention checkpoint the chain starts after is not signed by the retention worker, or cut rows younger than its policy allowed',
  anchor:
    'the chain no longer holds what its newest signed anchor recorded (rewritten or rolled back), or its anchors were deleted',
  'organization-missing':
    'the organization was in the set of organizations an earlier signed anchor recorded, and its chain is gone without an organization.delete audit row',
};

/** A break in one line: "seq 3, id …, kind altered: the row's values do not match its checksum". */
export const describeChainBreak = (b: ChainBreak) =>
  `seq ${b.seq}, id ${b.id ?? 'none'}, kind ${b.kind}: ${chainBreakMeaning[b.kind]}`;

export interface ChainBreak {
  seq: number;
  /** The row at fault; null when it is missing. */
  id: string | null;
  kind: ChainBreakKind;
}
