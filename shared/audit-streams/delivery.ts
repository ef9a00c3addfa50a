/**
 * Delivery of the audit trail, device event logs and agent diagnostic logs to their destinations
 * (docs/audit-streaming.md "Delivery"): at least once, in order per organization and stream, from a cursor per
 * (destination, organization, stream) kept in the database. Nothing polls: a write that seals audit rows (a device
 * event submission seals one) or stores diagnostic entries arms one coalesced job per organization on the work queue,
 * and that job drains every stream of every destination of the organization from its cursor to the head. A failed
 * attempt leaves the cursor where it was and arms its own retry, with a growing delay, until the receiver takes the
 * rows again.
 */
import { auditCategoryOf } from '../audit/categories.ts';
import type { AuditRow } from '../audit/row.ts';
import { selectChainPage } from '../audit/store.ts';
import { openSecret, sealSecret } from '../auth/key-seal.ts';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { countMetric, gaugeMetric } from '../observability/metrics.ts';
import { enqueue } from '../queue/work-queue.ts';
import { deliverJobKind, jobAgain, jobEnded, jobStarted } from './arm.ts';
import {
  jsonFormat,
  type LogRecord,
  octetCounted,
  recordOrg,
  recordSeq,
  recordTime,
  renderRecord,
  type StreamRecord,
  syslogRecord,
} from './formats.ts';
import { putNdjsonObjects } from './s3.ts';
import type { StreamFilter, StreamSource } from './schemas.ts';
import * as store from './store.ts';
import { type Destination, sendHec, sendHttps, sendSyslog, timeoutMs } from './transports.ts';

/** Rows read per page; the cursor moves once per page the receiver took. */
const batchRows = 5000;

/** Rows per HTTP post (HTTPS, HEC): a page goes as several posts, in order, before its cursor moves. */
const postRows = 1000;

/**
 * How long a claim holds a cursor (AUDIT_STREAM_LEASE_SECONDS; by default a few attempts' timeouts): a delivery
 * extends it while it runs (its heartbeat, every third of it), however long a slow receiver takes a page; one that
 * died lets the cursor go when its lease ends.
 */
const leaseSeconds = () => Number(process.env.AUDIT_STREAM_LEASE_SECONDS) || Math.ceil(timeoutMs() / 1000) * 3 + 30;

/**
 * Keeps the claim of a running delivery: extends its lease every third of it until stopped. A heartbeat that finds
 * the cursor no longer held (a replay moved it) changes nothing; the delivery learns it when it next moves the cursor.
 */
function heartbeat(db: Db, key: store.CursorKey & { epoch: number }): () => void {
  const lease = leaseSeconds();
  const timer = setInterval(
    () => {
      store.extendLease(db, key, lease).catch((error: unknown) =>
        logger.warn('[audit-streams] A lease could not be extended', {
          streamId: key.streamId,
          orgId: key.orgId,
          stream: key.source,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    },
    (lease * 1000) / 3,
  );
  timer.unref();
  return () => clearInterval(timer);
}

/** Waits before the retries of a destination that failed: 1 s, doubling, at most 10 minutes, for as long as it fails. */
const retryDelaySeconds = (attempts: number) => Math.min(600, 2 ** Math.min(attempts, 10));

/** Whether a row passes the destination's filter (categories, exact actions, or action prefixes ending in `*`). */
export function passesFilter(filter: StreamFilter, row: Pick<AuditRow, 'action'>): boolean {
  if (filter.categories && !filter.categories.includes(auditCategoryOf(row.action))) return false;
  if (
    filter.actions &&
    !filter.actions.some((action) =>
      action.endsWith('*') ? row.action.startsWith(action.slice(0, -1)) : row.action === action,
    )
  )
    return false;
  return true;
}

/** Whether a log entry passes the destination's filter of its stream (device events, diagnostic entries). */
export function passesLogFilter(filter: StreamFilter, record: LogRecord): boolean {
  if (record.type === 'device-event') {
    const only = filter.deviceEvents;
    if (only?.categories && !only.categories.includes(record.category)) return false;
    return !only?.levels || only.levels.includes(record.level);
  }
  const only = filter.agentLogs;
  if (only?.levels && !only.levels.includes(record.level)) return false;
  return !only?.components || only.components.includes(record.component);
}

/** The stream a record belongs to: the audit trail (rows and anchors), or a log. */
const sourceOf = (record: StreamRecord): StreamSource =>
  record.type === 'device-event' ? 'device-events' : record.type === 'agent-log' ? 'agent-logs' : 'audit';

/** The destination's secret in the clear; one stored in the clear (no seal key then) is sealed on this first read. */
export async function openedSecret(db: Db, destination: store.DeliverableStream): Promise<string | undefined> {
  if (destination.secret === null) return undefined;
  if (!destination.secretSealed) {
    const sealed = sealSecret(destination.secret);
    if (sealed) await store.updateStreamSecretSealed(db, destination.id, destination.secret, sealed);
    return destination.secret;
  }
  const secret = openSecret(destination.secret);
  if (secret === undefined) throw new Error('its secret cannot be opened (ENROLLMENT_KEY_SEAL_KEY unset or changed)');
  return secret;
}

/** One JSON value per line: the record's object (ocsf, ndjson), or its text line as a JSON string (rfc5424, cef). */
function ndjsonLine(record: StreamRecord, format: store.StreamRow['format']): string {
  const rendered = renderRecord(record, format);
  return jsonFormat(format) ? rendered : JSON.stringify(rendered);
}

/** Sends records to a destination in its format; throws when the receiver did not take them all. */
export async function sendRecords(
  destination: Destination & { format: store.StreamRow['format'] },
  secret: string | undefined,
  records: StreamRecord[],
): Promise<void> {
  const { format } = destination;
  switch (destination.type) {
    case 'syslog-tls':
    case 'syslog-tcp':
      return sendSyslog(
        destination,
        records.map((record) => octetCounted(syslogRecord(record, format))),
      );
    case 'https': {
      const lines = records.map((record) => ndjsonLine(record, format));
      return sendHttps(destination, secret ?? '', `${lines.join('\n')}\n`);
    }
    case 'splunk-hec': {
      // `{ time, host, source, sourcetype, event }`, the event (JSON already, or a line) written in as it was rendered.
      const events = records.map((record) => {
        const rendered = renderRecord(record, format);
        const time = JSON.stringify(Date.parse(recordTime(record)) / 1000);
        const sourcetype = `logbook:${sourceOf(record)}:${format}`;
        const event = jsonFormat(format) ? rendered : JSON.stringify(rendered);
        return `{"time":${time},"host":"logbook","source":"logbook","sourcetype":"${sourcetype}","event":${event}}`;
      });
      return sendHec(destination, secret ?? '', events.join('\n'));
    }
    case 's3':
      return putNdjsonObjects(
        destination.endpoint,
        recordOrg(records[0]!),
        byHour(records, format),
        sourceOf(records[0]!),
      );
  }
}

/** The records as NDJSON lines grouped by the hour of their time (`YYYY/MM/DD/HH`), with their seq range. */
function byHour(records: StreamRecord[], format: store.StreamRow['format']) {
  const groups = new Map<string, { hour: string; firstSeq: number; lastSeq: number; lines: string[] }>();
  for (const record of records) {
    const at = recordTime(record);
    const seq = recordSeq(record);
    const hour = `${at.slice(0, 4)}/${at.slice(5, 7)}/${at.slice(8, 10)}/${at.slice(11, 13)}`;
    const group = groups.get(hour) ?? { hour, firstSeq: seq, lastSeq: seq, lines: [] };
    group.lines.push(ndjsonLine(record, format));
    group.firstSeq = Math.min(group.firstSeq, seq);
    group.lastSeq = Math.max(group.lastSeq, seq);
    groups.set(hour, group);
  }
  return [...groups.values()];
}

export type CursorOutcome = 'delivered' | 'busy' | 'waiting' | 'failed' | 'replayed';

/** One page read from a cursor: its records, how far it moves the cursor, and whether more may follow. */
type Batch = {
  records: StreamRecord[];
  /** The key the cursor moves to once the receiver took the records (the cursor's own: nothing to move). */
  last: number;
  /** When the oldest row of the page was written, for the lag metric. */
  oldest?: string;
  /** The newest anchor sent (the audit trail's). */
  anchoredAt?: Date;
  more: boolean;
  empty: boolean;
};

/** Reads the organization's chain page after a seq. */
type ChainPages = (afterSeq: number) => Promise<AuditRow[]>;

/** Chain pages a run over the organization keeps, so destinations at the same place read each page once. */
const sharedPageCount = 4;

/**
 * The organization's chain pages for one run over it: destinations whose cursors stand at the same seq (the usual
 * case under a steady load: each took everything the last run read) share one read of each page instead of one each.
 * Rows once sealed never change, so a page read for one serves the other as it is. The last few pages are kept.
 */
function chainPages(db: Db, orgId: string): ChainPages {
  const pages = new Map<number, Promise<AuditRow[]>>();
  return (afterSeq) => {
    let page = pages.get(afterSeq);
    if (!page) {
      page = selectChainPage(db, orgId, { afterSeq, untilSeq: null, rows: batchRows, bytes: db.maxResultBytes });
      pages.set(afterSeq, page);
      if (pages.size > sharedPageCount) pages.delete(pages.keys().next().value!);
    }
    return page;
  };
}

/** The audit trail after `delivered`: a page of rows, and (when one waits) the anchors they complete. */
async function auditBatch(
  db: Db,
  pages: ChainPages,
  destination: store.DeliverableStream,
  key: store.CursorKey,
  delivered: number,
  anchorsWaiting: boolean,
): Promise<Batch> {
  const rows = await pages(delivered);
  const last = rows.at(-1)?.seq ?? delivered;
  const anchors = anchorsWaiting ? await store.selectAnchorsToStream(db, key, last) : [];
  const records: StreamRecord[] = [];
  for (const row of rows) if (passesFilter(destination.filter, row)) records.push({ type: 'audit', row });
  for (const { anchoredAt: _, ...anchor } of anchors) records.push(anchor);
  // A page cut short by the byte limit (the Data API's) is followed by the next.
  const full = rows.length === batchRows || (db.maxResultBytes !== undefined && rows.length > 0);
  return {
    records,
    last,
    oldest: rows[0]?.timestamp,
    anchoredAt: anchors.at(-1)?.anchoredAt,
    more: full || anchors.length === 100,
    empty: rows.length === 0 && anchors.length === 0,
  };
}

/**
 * A log stream after `delivered`, up to `head` (read when the run began, after its rows were numbered: every key up
 * to it is committed). The last page moves the cursor to the head itself.
 */
async function logBatch(
  db: Db,
  destination: store.DeliverableStream,
  key: store.CursorKey & { source: store.LogSource },
  delivered: number,
  head: number,
): Promise<Batch> {
  if (head <= delivered) return { records: [], last: delivered, more: false, empty: true };
  const rows = await store.selectLogPage(db, key.source, key.orgId, {
    afterSeq: delivered,
    untilSeq: head,
    rows: batchRows,
  });
  const more = rows.length === batchRows;
  return {
    records: rows.filter((row) => passesLogFilter(destination.filter, row)),
    last: more ? rows.at(-1)!.seq : head,
    oldest: rows[0]?.storedAt,
    more,
    empty: false,
  };
}

/** Sends a page: in one piece (syslog: one connection; S3: its objects), or as HTTP posts of `postRows`, in order. */
async function sendPage(
  destination: store.DeliverableStream,
  secret: string | undefined,
  records: StreamRecord[],
): Promise<void> {
  if (destination.type !== 'https' && destination.type !== 'splunk-hec')
    return sendRecords(destination, secret, records);
  for (let from = 0; from < records.length; from += postRows)
    await sendRecords(destination, secret, records.slice(from, from + postRows));
}

/**
 * Drains one destination's cursor in one organization and stream: claims it (one sender per cursor keeps the order),
 * sends page after page from the cursor up to the head (the audit trail's each followed by the anchors it
 * completes), reading the next page while the receiver takes the last, and moves the cursor once per page the
 * receiver took. A cursor another delivery holds is marked, and that delivery goes on once more before it lets go.
 * A failure keeps the cursor and arms the retry.
 */
export async function deliverCursor(
  db: Db,
  destination: store.DeliverableStream,
  orgId: string,
  source: StreamSource = 'audit',
  pages: ChainPages = chainPages(db, orgId),
  now = new Date(),
): Promise<CursorOutcome> {
  const key: store.CursorKey = { streamId: destination.id, orgId, source };
  const claim = await store.claimCursor(db, key, leaseSeconds());
  if ('held' in claim) {
    // The holder delivers once more for this; should it have died, its lease's end is seen by a job armed for then.
    if (!claim.held.marked)
      await enqueue({ kind: deliverJobKind, orgId }, Math.max(1, (claim.held.until.getTime() - Date.now()) / 1000 + 1));
    return 'busy';
  }
  const { cursor } = claim;
  const held = { ...key, epoch: cursor.epoch };
  // After a failure the retry is armed for its time: writes before then do not hammer a receiver that is down.
  if (cursor.retryAt && cursor.retryAt > now) {
    await store.letCursorGo(db, held);
    return 'waiting';
  }
  let delivered = cursor.deliveredSeq;
  let anchorsWaiting = cursor.anchorsWaiting;
  // The time of the oldest row this run sends, for the lag metric.
  let oldest: string | undefined;
  const stopHeartbeat = heartbeat(db, held);
  try {
    const secret = await openedSecret(db, destination);
    for (;;) {
      // The log rows waiting for their keys are numbered first (by whichever delivery of the organization comes).
      const head = source === 'audit' ? 0 : await db.transaction((tx) => store.numberedLogHead(tx, orgId, source));
      const read = (after: number) =>
        source === 'audit'
          ? auditBatch(db, pages, destination, key, after, anchorsWaiting)
          : logBatch(db, destination, { ...key, source }, after, head);
      let next: Promise<Batch> | undefined = read(delivered);
      let released: { again: boolean; anchorsWaiting: boolean } | undefined;
      while (next) {
        const batch: Batch = await next;
        // The next page is read while the receiver takes this one.
        next = batch.more ? read(batch.last) : undefined;
        // A page that failed to be read while this one was sent is not left unhandled: its error comes when awaited.
        next?.catch(() => undefined);
        if (batch.empty) break;
        oldest ??= batch.oldest;
        if (batch.records.length > 0) await sendPage(destination, secret, batch.records);
        countMetric('AuditStreamRowsDelivered', batch.records.length);
        if (!next) {
          // The last page: the cursor moves and is let go (unless marked meanwhile) in one statement.
          released = await store.finishCursor(db, held, batch.last, leaseSeconds(), batch.anchoredAt);
          if (!released) return 'replayed';
          delivered = batch.last;
          break;
        }
        if (!(await store.advanceCursor(db, held, batch.last, leaseSeconds(), batch.anchoredAt))) {
          await next.catch(() => undefined);
          return 'replayed';
        }
        delivered = batch.last;
      }
      // Another delivery marked the cursor while this one ran: once more, from where it stands.
      released ??= await store.releaseCursor(db, held, leaseSeconds());
      if (!released.again) break;
      anchorsWaiting = released.anchorsWaiting;
    }
  } catch (error) {
    stopHeartbeat();
    recordLag(oldest);
    countMetric('AuditStreamDeliveryFailures');
    const message = error instanceof Error ? error.message : String(error);
    const delay = retryDelaySeconds(cursor.attempts);
    await store.failCursor(db, held, message, new Date(Date.now() + delay * 1000));
    await enqueue({ kind: deliverJobKind, orgId }, delay);
    logger.warn('[audit-streams] A delivery failed; the cursor stays and the retry is armed', {
      streamId: destination.id,
      orgId,
      stream: source,
      afterSeq: delivered,
      retryInSeconds: delay,
      error: message,
    });
    return 'failed';
  } finally {
    stopHeartbeat();
  }
  recordLag(oldest);
  return 'delivered';
}

/** The lag metric: how long the oldest row of this run waited for its destination (its alarm: docs/operations.md). */
function recordLag(oldest: string | undefined): void {
  if (oldest) gaugeMetric('AuditStreamLagSeconds', Math.max(0, (Date.now() - Date.parse(oldest)) / 1000));
}

/**
 * One run over the organization: every stream of every destination, each from its own cursor, side by side (the
 * audit trail's pages read once for the destinations at the same place).
 */
async function deliverOnce(db: Db, orgId: string): Promise<CursorOutcome[]> {
  const destinations = await store.selectDestinationsOf(db, orgId);
  const pages = chainPages(db, orgId);
  return Promise.all(
    destinations.flatMap((destination) =>
      destination.streams.map((source) => deliverCursor(db, destination, orgId, source, pages)),
    ),
  );
}

/**
 * The job: runs over the organization, and again while writes came meanwhile (seen in this process: jobAgain), so
 * rows written during a run go out with the next page instead of waiting for a job of their own.
 */
export async function deliverOrganization(db: Db, orgId: string): Promise<CursorOutcome[]> {
  jobStarted(orgId);
  let outcomes: CursorOutcome[] = [];
  let ended = false;
  try {
    do outcomes = await deliverOnce(db, orgId);
    while (jobAgain(orgId));
    ended = true;
  } finally {
    // A write that came while a run threw is not lost: it gets a job of its own.
    if (jobEnded(orgId) && !ended) await enqueue({ kind: deliverJobKind, orgId });
  }
  return outcomes;
}
