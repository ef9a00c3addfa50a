import type { KeyObject } from 'node:crypto';
import { type Db, one } from '../db/db.ts';
import type { AnchorFields } from './anchor-signing.ts';
import { selectLatestAnchor, selectOrganizationMissing } from './anchor-store.ts';
import { auditChecksum } from './canonical.ts';
import type { ChainBreak, ChainBreakKind } from './chain-break.ts';
import { anchorBreak, anchorsDeletedBreak, checkpointBreak } from './evidence.ts';
import type { AuditRow } from './row.ts';
import {
  anchoredAction,
  type ChainEvidence,
  type ChainLink,
  type CheckpointRecord,
  selectAnchoredRecord,
  selectChainEntries,
  selectChainHead,
  selectChainLinks,
  selectLatestCheckpoint,
  selectSeqSpan,
  selectUnsealedEntry,
} from './store.ts';
import type { SeqRange } from './watch-plan.ts';

export interface ChainVerification {
  ok: boolean;
  /** Rows whose checksum was recomputed. */
  checked: number;
  firstBreak?: ChainBreak;
  /**
   * With `reportHead`: the organization's chain head as read in the verification snapshot (null: no head). The chain
   * is only as trustworthy as this value: whoever can rewrite the database can recompute every checksum and the head
   * with it, so compare it with a copy kept outside the database (an earlier export, a recorded reply).
   */
  head?: ChainLink | null;
  /** With `anchor`: whether the chain still holds what the anchor signed (and, given a key, the signature is valid). */
  anchor?: { seq: number; ok: boolean };
}

export interface VerifyOptions {
  /** Only rows timestamped at or after this instant (and the links around them). */
  from?: Date | string;
  /** Only rows timestamped at or before this instant (and the links around them). */
  to?: Date | string;
  /** Called (and awaited) after each page; `total` is the number of chain positions in range. */
  onProgress?: (progress: { checked: number; total: number }) => void | Promise<void>;
  pageRows?: number;
  pageBytes?: number;
  /** Also return the chain head read in the snapshot (`head`). */
  reportHead?: boolean;
  /**
   * Prove the chain up to a signed anchor is unchanged: the row at anchor.seq (or the checkpoint, once pruned) must
   * carry anchor.checksum, the head must not be below it, the boundary not before the anchor's, and, with
   * `publicKey`, the signature must be valid. Reported as `anchor`; a failure makes `ok` false.
   */
  anchor?: { anchor: AnchorFields & { signature: string }; publicKey?: KeyObject };
  /**
   * Check the signed evidence in the database too: the retention checkpoint the chain starts after
   * (signed, over rows older than its policy allowed), the newest anchor (unless `anchor` names one), and that an
   * organization recorded as anchored still has anchors. Signatures are checked with `publicKey` when given.
   */
  evidence?: { publicKey?: KeyObject };
  /**
   * Only these ranges of positions, in order, each checked like a window (the row before it and the row after it
   * too); a range whose `last` is null runs to the head, and checks the head. For the integrity watch at scale.
   */
  seqRanges?: readonly SeqRange[];
}

const defaultPageRows = 5_000;

/** Where the rows checked sit in their chain, as far as the reader knows it (docs/audit.md). */
export interface ChainBounds {
  /**
   * The positions the chain holds: from the earliest retained one to the head's (unbounded when the head is gone:
   * verifyChain reports that after the rows). A row outside them was never sealed into the chain: inserted.
   * Unknown offline, where the head is not.
   */
  held?: { first: number; last: number };
  /**
   * What the first row checked links back to: a row before the checked range (`predecessorSeq`, the first row
   * itself: its checksum is checked, its own link is not), or nothing, the earliest retained row (`start`, the
   * first position the chain must hold; its link is null or the latest retention checkpoint's checksum).
   */
  anchor: { predecessorSeq: number } | { start: number; checkpoint?: ChainLink };
}

/** How far a check got; a page's result continues on the next page. */
export interface ChainScan {
  /** Rows whose checksum was recomputed. */
  checked: number;
  /** The last row that passed: the next row must link to it. */
  last?: AuditRow;
  firstBreak?: ChainBreak;
}

/**
 * The chain rules over rows in seq order (docs/audit.md), pure: every checksum is
 * recomputed here from the row values, each row must hold the position after the last one and link to its
 * checksum, and the first row must fit `bounds`. Stops at the first break.
 */
export function checkAuditRows(
  rows: Iterable<AuditRow>,
  bounds: ChainBounds,
  scan: ChainScan = { checked: 0 },
): ChainScan {
  let { checked, last } = scan;
  const sealedAsStored = (row: AuditRow) => {
    checked += 1;
    return auditChecksum(row) === row.checksum;
  };
  const broken = (seq: number, id: string | null, kind: ChainBreakKind): ChainScan => ({
    checked,
    last,
    firstBreak: { seq, id, kind },
  });

  for (const row of rows) {
    if (bounds.held && (row.seq < bounds.held.first || row.seq > bounds.held.last))
      return broken(row.seq, row.id, 'inserted');
    if (last) {
      // A second row claiming a position already checked is a fork.
      if (row.seq <= last.seq) return broken(row.seq, row.id, 'inserted');
      if (row.seq !== last.seq + 1) return broken(last.seq + 1, null, 'missing');
      if (!sealedAsStored(row)) return broken(row.seq, row.id, 'altered');
      if (row.prevChecksum !== last.checksum) return broken(row.seq, row.id, 'link');
    } else if ('predecessorSeq' in bounds.anchor) {
      if (row.seq !== bounds.anchor.predecessorSeq) return broken(bounds.anchor.predecessorSeq, null, 'missing');
      if (!sealedAsStored(row)) return broken(row.seq, row.id, 'altered');
    } else {
      const { start, checkpoint } = bounds.anchor;
      // The earliest retained row: a null link or one to the latest checkpoint is a pruned prefix, not a break.
      const prunedPrefix =
        row.prevChecksum === null ||
        (checkpoint !== undefined && row.seq === start && row.prevChecksum === checkpoint.checksum);
      if (!prunedPrefix && row.seq !== start) return broken(start, null, 'missing');
      if (!sealedAsStored(row)) return broken(row.seq, row.id, 'altered');
      if (!prunedPrefix) return broken(row.seq, row.id, 'link');
    }
    last = row;
  }
  return { checked, last };
}

/** A link's result row is a fixed size: what a page of links may hold under a result byte budget. */
const linkRowBytes = 512;

/** One page of the chain: its rows, and the last link read (null: none left). */
type ChainPage = { rows: AuditRow[]; lastSeq: number | null };

/**
 * One page of the chain after `afterSeq`, read in one ordered pass per table: the links of a seq range (their
 * primary key), then their entries by position (the entries' pos index), merged here. A link without its entry is
 * left out, as the audit_logs view leaves it out (the verifier reports the position as missing). Under a byte budget
 * the entries may be cut short: the page ends at the last link whose entry was read, and is at least one link.
 */
async function readChainPage(
  db: Db,
  orgId: string,
  page: { afterSeq: number | null; untilSeq: number | null; rows: number; bytes?: number },
): Promise<ChainPage> {
  const links = await selectChainLinks(db, orgId, page);
  if (links.length === 0) return { rows: [], lastSeq: null };
  const positions = links.map((link) => link.pos).sort((a, b) => a - b);
  let entries = await selectChainEntries(db, orgId, positions, page.bytes);
  // Cut by the byte budget: only links up to the last entry read are complete.
  let reached = page.bytes !== undefined && entries.length > 0 ? entries.at(-1)!.pos : Number.POSITIVE_INFINITY;
  let end = links.findIndex((link) => link.pos > reached);
  if (end === 0) {
    // The first link's entry lies past the cut (positions out of seq order): that entry alone.
    entries = await selectChainEntries(db, orgId, [links[0]!.pos], page.bytes);
    reached = links[0]!.pos;
    end = 1;
  }
  const complete = end === -1 ? links : links.slice(0, end);
  const byPos = new Map(entries.map((entry) => [entry.pos, entry]));
  const rows: AuditRow[] = [];
  for (const { seq, pos, checksum, prevChecksum } of complete) {
    const e = byPos.get(pos);
    // Field by field: a spread of each of a million rows costs as much as hashing it.
    if (e)
      rows.push({
        id: e.id,
        orgId: e.orgId,
        seq,
        timestamp: e.timestamp,
        actorType: e.actorType,
        actorId: e.actorId,
        actorEmail: e.actorEmail,
        action: e.action,
        resourceType: e.resourceType,
        resourceId: e.resourceId,
        resourceName: e.resourceName,
        details: e.details,
        ipAddress: e.ipAddress,
        userAgent: e.userAgent,
        result: e.result,
        errorMessage: e.errorMessage,
        prevChecksum,
        checksum,
      });
  }
  return { rows, lastSeq: complete.at(-1)!.seq };
}

/**
 * The organization's chain after `afterSeq` (null: from its start) up to `untilSeq` (null: its end), page by
 * page in seq order, each page under the executor's result limit: what the verifier reads, and all it reads.
 * Each page is asked for as soon as the one before it arrives, so the database reads it while the caller checks
 * (hashes) the one before (statements of one transaction still run one at a time).
 */
export async function* readChainPages(
  db: Db,
  orgId: string,
  range: { afterSeq: number | null; untilSeq: number | null },
  options: Pick<VerifyOptions, 'pageRows' | 'pageBytes'> = {},
): AsyncGenerator<AuditRow[]> {
  const pageRows = options.pageRows ?? defaultPageRows;
  const bytes = options.pageBytes ?? db.maxResultBytes;
  // Under a byte budget the links' own result must fit it too.
  const linkRows = bytes === undefined ? pageRows : Math.max(1, Math.min(pageRows, Math.floor(bytes / linkRowBytes)));
  const read = (afterSeq: number | null, rows: number) =>
    readChainPage(db, orgId, { afterSeq, untilSeq: range.untilSeq, rows, ...(bytes !== undefined && { bytes }) });
  let rows = linkRows;
  let next = read(range.afterSeq, rows);
  try {
    for (;;) {
      const page = await next;
      if (page.lastSeq === null) return;
      const { lastSeq } = page;
      // Rows cut by the byte budget were read for nothing: ask next for about as many as fitted.
      const taken = page.rows.length;
      rows = Math.min(linkRows, taken < rows ? Math.max(1, taken + Math.ceil(taken / 4)) : rows * 2);
      next =
        range.untilSeq !== null && lastSeq >= range.untilSeq
          ? Promise.resolve({ rows: [], lastSeq: null })
          : read(lastSeq, rows);
      // A page of links whose entries are all gone holds no row: the next one is read all the same.
      if (page.rows.length > 0) yield page.rows;
    }
  } finally {
    // A caller that stops early (a break found) leaves the next page unread.
    next.catch(() => undefined);
  }
}

/**
 * Verifies an organization's hash chain from the row values in one snapshot, and reports the
 * first break; a window also checks its edges (docs/ARCHITECTURE.md "Chain verification").
 */
export function verifyChain(db: Db, orgId: string, options: VerifyOptions = {}): Promise<ChainVerification> {
  return db.transaction(
    async (tx) => {
      const head = await selectChainHead(tx, orgId);
      const checkpoint = await selectLatestCheckpoint(tx, orgId);
      const result = options.seqRanges
        ? await verifyRanges(tx, orgId, options, options.seqRanges, head, checkpoint)
        : await verifyInSnapshot(tx, orgId, options, head, checkpoint);
      const { evidence } = options;
      const newest = evidence && (await selectLatestAnchor(tx, orgId));
      const newestFault =
        newest && (await checkAnchor(tx, orgId, { anchor: newest, publicKey: evidence.publicKey }, head, checkpoint));
      const kept = options.anchor;
      const keptFault = kept && (await checkAnchor(tx, orgId, kept, head, checkpoint));
      const evidenceFault = evidence
        ? (checkpoint && checkpointBreak(orgId, checkpoint, evidence.publicKey)) ||
          anchorsDeletedBreak(newest, await selectAnchoredRecord(tx, orgId), checkpoint)
        : undefined;
      // The anchor reported: the one kept outside the database when given, else the newest in it.
      const reported = kept
        ? { seq: kept.anchor.seq, ok: !keptFault }
        : newest
          ? { seq: newest.seq, ok: !newestFault }
          : undefined;
      const checked = reported ? { ...result, anchor: reported } : result;
      // An organization an anchored set recorded, with no chain left at all: wiped whole, with its anchors.
      const wiped =
        evidence && !head && result.checked === 0 && !result.firstBreak && (await selectOrganizationMissing(tx, orgId))
          ? ({ seq: 0, id: null, kind: 'organization-missing' } as const)
          : undefined;
      // The chain's own rules first, then the boundary's signature and the anchors' existence, then the anchors.
      const firstBreak = result.firstBreak ?? evidenceFault ?? newestFault ?? keptFault ?? wiped;
      return firstBreak ? { ...checked, ok: false, firstBreak } : checked;
    },
    { isolation: 'REPEATABLE READ' },
  );
}

/** The anchor checked against the chain as read in the snapshot (shared/audit/evidence.ts). */
async function checkAnchor(
  tx: Db,
  orgId: string,
  { anchor, publicKey }: NonNullable<VerifyOptions['anchor']>,
  head: ChainLink | undefined,
  checkpoint: CheckpointRecord | undefined,
): Promise<ChainBreak | undefined> {
  const anchoredRow =
    (await one<{ id: string; checksum: string }>(
      tx,
      'SELECT id::text AS id, checksum FROM audit_logs WHERE org_id = :orgId::uuid AND seq = :seq::bigint',
      { orgId, seq: anchor.seq },
    )) ?? null;
  return anchorBreak(orgId, anchor, { head, checkpoint, anchoredRow }, publicKey);
}

/** Each range in turn, in the same snapshot, up to the first break; `checked` over all of them. */
async function verifyRanges(
  tx: Db,
  orgId: string,
  options: VerifyOptions,
  ranges: readonly SeqRange[],
  head: ChainLink | undefined,
  checkpoint: ChainLink | undefined,
): Promise<ChainVerification> {
  let checked = 0;
  for (const range of ranges) {
    const result = await verifyInSnapshot(tx, orgId, options, head, checkpoint, range);
    checked += result.checked;
    if (result.firstBreak) return { ...result, checked };
  }
  return options.reportHead ? { ok: true, checked, head: head ?? null } : { ok: true, checked };
}

async function verifyInSnapshot(
  tx: Db,
  orgId: string,
  options: VerifyOptions,
  head: ChainLink | undefined,
  checkpoint: ChainLink | undefined,
  range?: SeqRange,
): Promise<ChainVerification> {
  const withHead = (result: ChainVerification): ChainVerification =>
    options.reportHead ? { ...result, head: head ?? null } : result;
  // The first position the retained chain must hold (retention may cut the oldest rows).
  const start = (checkpoint?.seq ?? 0) + 1;

  let afterSeq: number | null = null;
  let untilSeq: number | null = null;
  // In a window that does not reach back to `start`: the row whose checksum the first row in range links to.
  let predecessorSeq: number | undefined;
  if (range) {
    afterSeq = range.first - 2;
    untilSeq = range.last === null ? null : range.last + 1;
    if (range.first - 1 >= start) predecessorSeq = range.first - 1;
  } else if (options.from !== undefined || options.to !== undefined) {
    const span = await selectSeqSpan(tx, orgId, options.from ?? null, options.to ?? null);
    if (!span) return withHead({ ok: true, checked: 0 });
    afterSeq = span.first - 2;
    untilSeq = span.last + 1;
    if (span.first - 1 >= start) predecessorSeq = span.first - 1;
  }

  const bounds: ChainBounds = {
    // Without a head the chain's end is unknown: its rows are checked, and the missing head is reported after them.
    held: { first: start, last: head ? head.seq : Number.POSITIVE_INFINITY },
    anchor: predecessorSeq !== undefined ? { predecessorSeq } : { start, checkpoint },
  };
  const total =
    untilSeq !== null && afterSeq !== null
      ? untilSeq - afterSeq
      : Math.max((head?.seq ?? 0) - (afterSeq !== null ? afterSeq + 1 : start) + 1, 0);
  let scan: ChainScan = { checked: 0 };
  for await (const page of readChainPages(tx, orgId, { afterSeq, untilSeq }, options)) {
    scan = checkAuditRows(page, bounds, scan);
    if (scan.firstBreak) return withHead({ ok: false, checked: scan.checked, firstBreak: scan.firstBreak });
    await options.onProgress?.({ checked: scan.checked, total });
  }

  const { checked, last } = scan;
  const broken = (seq: number, id: string | null, kind: ChainBreakKind): ChainVerification =>
    withHead({ ok: false, checked, firstBreak: { seq, id, kind } });
  // A whole chain that holds: every entry of the organization must be one of its rows (seq 0: a row at no position).
  const intact = async (): Promise<ChainVerification> => {
    if (afterSeq !== null || untilSeq !== null) return withHead({ ok: true, checked });
    const unsealed = await selectUnsealedEntry(tx, orgId, checked);
    return unsealed ? broken(0, unsealed, 'inserted') : withHead({ ok: true, checked });
  };
  if (!head) {
    // The head is written with the first row and never removed: rows, or a retention checkpoint, without one mean
    // it was deleted, and whatever followed the last row it accounted for with it (a deleted tail cannot be told
    // from an intact one). What is missing starts after the last row, or after the checkpoint when no row is left.
    if (last)
      return untilSeq === null || last.seq < untilSeq
        ? broken(last.seq + 1, null, 'missing')
        : withHead({ ok: true, checked });
    // No chain at all: still, no entry of the organization may be there unsealed.
    return checkpoint ? broken(checkpoint.seq + 1, null, 'missing') : intact();
  }
  if (!last) {
    // Nothing retained: the whole chain was cut by retention, or its rows are gone.
    if (checkpoint?.seq === head.seq)
      return checkpoint.checksum === head.checksum ? intact() : broken(head.seq, null, 'link');
    return broken(start, null, 'missing');
  }
  // A deleted tail shows against the head (docs/audit.md); a window only needs the row after it.
  const end = untilSeq === null ? head.seq : Math.min(untilSeq, head.seq);
  if (last.seq < end) return broken(last.seq + 1, null, 'missing');
  if (last.seq === head.seq && last.checksum !== head.checksum) return broken(last.seq, last.id, 'link');
  return intact();
}

/** One organization's rows of an export, checked without the database. */
export interface ExportedChainVerification {
  orgId: string;
  firstSeq: number;
  lastSeq: number;
  /** Rows whose checksum was recomputed. */
  checked: number;
  /**
   * Whether the first row's link was checked: only the chain's first row (seq 1) links to nothing known.
   * Any other first row's prevChecksum names a row outside the file, which only the database holds.
   */
  firstLinkChecked: boolean;
  /** The first row's prevChecksum: to compare with the checksum of the row before it in the database. */
  firstPrevChecksum: string | null;
  /** The checksum of the file's last row of the organization: where its verified range ends. */
  lastChecksum: string;
  /** The head the file recorded for the organization (exports carry `heads`); undefined when the file has none. */
  recordedHead?: ChainLink;
  firstBreak?: ChainBreak;
}

export type OfflineVerification =
  | { contiguous: true; ok: boolean; checked: number; chains: ExportedChainVerification[] }
  /** Positions between `afterSeq` and `nextSeq` of the organization are not in the rows, and may rightly not be. */
  | { contiguous: false; orgId: string; afterSeq: number; nextSeq: number };

/**
 * Verifies exported rows without the database (an export verifies on its own), each organization's rows
 * in seq order by the chain rules of `checkAuditRows`: every checksum, and every link between consecutive rows.
 * `complete` says the rows are every row of their range (an unfiltered export), so a gap in seq is a missing row;
 * otherwise a gap may be a row the filters left out, and the range cannot be verified offline.
 */
export function verifyRowsOffline(
  rows: readonly AuditRow[],
  options: {
    complete: boolean;
    heads?: Readonly<Record<string, ChainLink>>;
    /** The signed evidence the export carried per organization, checked as the database verifier does. */
    evidence?: Readonly<Record<string, ChainEvidence>>;
    /** The key signatures are checked with; without one they are not. */
    publicKey?: KeyObject;
  },
): OfflineVerification {
  const byOrg = new Map<string, AuditRow[]>();
  for (const row of rows) {
    const own = byOrg.get(row.orgId);
    if (own) own.push(row);
    else byOrg.set(row.orgId, [row]);
  }
  const chains = [...byOrg]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([orgId, own]) => ({ orgId, rows: own.sort((a, b) => a.seq - b.seq) }));

  if (!options.complete) {
    for (const { orgId, rows: own } of chains) {
      const gap = own.findIndex((row, i) => i > 0 && row.seq > own[i - 1]!.seq + 1);
      if (gap > 0) return { contiguous: false, orgId, afterSeq: own[gap - 1]!.seq, nextSeq: own[gap]!.seq };
    }
  }
  const verified = chains.map(({ orgId, rows: own }): ExportedChainVerification => {
    const first = own[0]!;
    const last = own.at(-1)!;
    const recordedHead = options.heads?.[orgId];
    const evidence = options.evidence?.[orgId];
    const checkpoint = evidence?.checkpoint ?? undefined;
    // The file starts at the chain's retained start: its first row links to the checkpoint (or is seq 1).
    const startsChain = first.seq === (checkpoint?.seq ?? 0) + 1;
    const scan = checkAuditRows(own, {
      anchor:
        startsChain || (options.complete && evidence)
          ? { start: (checkpoint?.seq ?? 0) + 1, checkpoint }
          : { predecessorSeq: first.seq },
      // The recorded head was read in the export's snapshot: no row of that snapshot lies past it.
      ...(recordedHead && { held: { first: 1, last: recordedHead.seq } }),
    });
    const firstBreak =
      scan.firstBreak ??
      headBreak(last, recordedHead, options.complete) ??
      (evidence && evidenceBreak(orgId, own, evidence, recordedHead, options));
    return {
      orgId,
      firstSeq: first.seq,
      lastSeq: last.seq,
      checked: scan.checked,
      firstLinkChecked: startsChain,
      firstPrevChecksum: first.prevChecksum,
      lastChecksum: last.checksum,
      ...(recordedHead && { recordedHead }),
      ...(firstBreak && { firstBreak }),
    };
  });
  return {
    contiguous: true,
    ok: verified.every((chain) => !chain.firstBreak),
    checked: verified.reduce((sum, chain) => sum + chain.checked, 0),
    chains: verified,
  };
}

/** The export's signed evidence of one organization against its rows, by the rules of shared/audit/evidence.ts. */
function evidenceBreak(
  orgId: string,
  rows: readonly AuditRow[],
  evidence: ChainEvidence,
  head: ChainLink | undefined,
  options: { complete: boolean; publicKey?: KeyObject },
): ChainBreak | undefined {
  const checkpoint = evidence.checkpoint ?? undefined;
  const recordSeq = evidence.anchoredRecordSeq ?? rows.find((row) => row.action === anchoredAction)?.seq;
  const fault =
    (checkpoint && checkpointBreak(orgId, checkpoint, options.publicKey)) ||
    anchorsDeletedBreak(evidence.anchor, recordSeq, checkpoint);
  if (fault || !evidence.anchor) return fault;
  const held = rows.find((row) => row.seq === evidence.anchor!.seq);
  const anchoredRow = held ? { id: held.id, checksum: held.checksum } : options.complete ? null : 'unknown';
  return anchorBreak(orgId, evidence.anchor, { head, checkpoint, anchoredRow }, options.publicKey);
}

/**
 * The file's last row of an organization against the head the file recorded: the head's row must be that row,
 * or, in a complete export (every row in scope), rows after the last one were taken out of the file.
 */
function headBreak(last: AuditRow, head: ChainLink | undefined, complete: boolean): ChainBreak | undefined {
  if (!head) return undefined;
  if (last.seq === head.seq)
    return last.checksum === head.checksum ? undefined : { seq: last.seq, id: last.id, kind: 'link' };
  if (complete && last.seq < head.seq) return { seq: last.seq + 1, id: null, kind: 'missing' };
  return undefined;
}
