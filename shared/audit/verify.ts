import type { Db } from '../db/db.ts';
import { auditChecksum } from './canonical.ts';
import { readChainHead, readChainPage, readLatestCheckpoint, readSeqSpan, type ChainRow } from './store.ts';

/**
 * altered: a row's values do not match its checksum; missing: a position of the chain has no row;
 * inserted: a row outside the positions the head and the checkpoint account for;
 * link: a row's prevChecksum (or the head) does not point at the row before it.
 */
export type ChainBreakKind = 'altered' | 'missing' | 'inserted' | 'link';

export interface ChainBreak {
  seq: number;
  /** The row at fault; null when it is missing. */
  id: string | null;
  kind: ChainBreakKind;
}

export interface ChainVerification {
  ok: boolean;
  /** Rows whose checksum was recomputed. */
  checked: number;
  firstBreak?: ChainBreak;
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
}

const defaultPageRows = 5_000;
// DESIGN.md "Database": a page stays under the Data API's 1 MiB result limit.
const defaultPageBytes = 1_000_000;

/**
 * Verifies an organization's hash chain (seed 6 rule 4, DESIGN.md "Audit chain") by recomputing
 * every checksum here, from the row values, and reports the first break.
 *
 * The head, the checkpoint and all pages are read in one REPEATABLE READ snapshot, so a concurrent
 * write never looks like a deleted tail. A time window [from, to] verifies the contiguous chain
 * positions spanned by its rows, plus the row before them (the first row's link) and the row after
 * them (or the head), so a row deleted at either edge of the window is still found.
 */
export function verifyChain(db: Db, orgId: string, options: VerifyOptions = {}): Promise<ChainVerification> {
  return db.transaction(
    async (tx) => {
      const head = await readChainHead(tx, orgId);
      const checkpoint = await readLatestCheckpoint(tx, orgId);
      // The first position the retained chain must hold (seed 6 retention: the oldest rows may be cut).
      const start = (checkpoint?.seq ?? 0) + 1;

      let afterSeq: number | null = null;
      let untilSeq: number | null = null;
      // In a window that does not reach back to `start`: the row whose checksum the first row in range links to.
      let predecessorSeq: number | undefined;
      if (options.from !== undefined || options.to !== undefined) {
        const span = await readSeqSpan(tx, orgId, options.from ?? null, options.to ?? null);
        if (!span) return { ok: true, checked: 0 };
        afterSeq = span.first - 2;
        untilSeq = span.last + 1;
        if (span.first - 1 >= start) predecessorSeq = span.first - 1;
      }

      let checked = 0;
      let previous: ChainRow | undefined;
      const total = untilSeq !== null && afterSeq !== null ? untilSeq - afterSeq : Math.max((head?.seq ?? 0) - start + 1, 0);
      const sealedAsStored = (row: ChainRow) => {
        checked += 1;
        return auditChecksum(row) === row.checksum;
      };
      const broken = (seq: number, id: string | null, kind: ChainBreakKind): ChainVerification => ({ ok: false, checked, firstBreak: { seq, id, kind } });

      const check = (row: ChainRow): ChainVerification | undefined => {
        if (!head || row.seq > head.seq || row.seq < start) return broken(row.seq, row.id, 'inserted');
        if (previous) {
          if (row.seq !== previous.seq + 1) return broken(previous.seq + 1, null, 'missing');
          if (!sealedAsStored(row)) return broken(row.seq, row.id, 'altered');
          if (row.prevChecksum !== previous.checksum) return broken(row.seq, row.id, 'link');
          return undefined;
        }
        if (predecessorSeq !== undefined) {
          if (row.seq !== predecessorSeq) return broken(predecessorSeq, null, 'missing');
          return sealedAsStored(row) ? undefined : broken(row.seq, row.id, 'altered');
        }
        // The earliest retained row: a null link or one to the latest checkpoint is a pruned prefix, not a break (seed 3).
        const prunedPrefix = row.prevChecksum === null || (checkpoint !== undefined && row.seq === start && row.prevChecksum === checkpoint.checksum);
        if (!prunedPrefix && row.seq !== start) return broken(start, null, 'missing');
        if (!sealedAsStored(row)) return broken(row.seq, row.id, 'altered');
        return prunedPrefix ? undefined : broken(row.seq, row.id, 'link');
      };

      const pageRows = options.pageRows ?? defaultPageRows;
      let rows = pageRows;
      for (;;) {
        const page = await readChainPage(tx, orgId, { afterSeq, untilSeq, rows, bytes: options.pageBytes ?? defaultPageBytes });
        if (page.length === 0) break;
        // Rows cut by the byte budget were read for nothing: ask next for about as many as fitted.
        rows = Math.min(pageRows, page.length < rows ? page.length + Math.ceil(page.length / 4) : rows * 2);
        for (const row of page) {
          const failure = check(row);
          if (failure) return failure;
          previous = row;
        }
        afterSeq = previous!.seq;
        await options.onProgress?.({ checked, total });
      }

      if (!head) return { ok: true, checked };
      if (!previous) {
        // Nothing retained: the whole chain was cut by retention, or its rows are gone.
        if (checkpoint?.seq === head.seq) return checkpoint.checksum === head.checksum ? { ok: true, checked } : broken(head.seq, null, 'link');
        return broken(start, null, 'missing');
      }
      // A deleted tail shows against the head (DESIGN.md "Audit chain"); a window only needs the row after it.
      const end = untilSeq === null ? head.seq : Math.min(untilSeq, head.seq);
      if (previous.seq < end) return broken(previous.seq + 1, null, 'missing');
      if (previous.seq === head.seq && previous.checksum !== head.checksum) return broken(previous.seq, previous.id, 'link');
      return { ok: true, checked };
    },
    { isolation: 'REPEATABLE READ' },
  );
}
