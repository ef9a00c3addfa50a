/**
 * Delivery of the audit trail to its destinations (docs/audit-streaming.md "Delivery"): at least once, in seq order
 * per organization, from a cursor per (destination, organization) kept in the database. Nothing polls: a write that
 * seals rows arms one coalesced job per organization on the work queue, and that job drains every destination of
 * the organization from its cursor to the head. A failed attempt leaves the cursor where it was and arms its own
 * retry, with a growing delay, until the receiver takes the rows again.
 */
import { auditCategoryOf } from '../audit/categories.ts';
import type { AuditRow } from '../audit/row.ts';
import { selectChainPage } from '../audit/store.ts';
import { openSecret, sealSecret } from '../auth/key-seal.ts';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { countMetric, gaugeMetric } from '../observability/metrics.ts';
import { enqueue } from '../queue/work-queue.ts';
import { deliverJobKind, jobStarted } from './arm.ts';
import { jsonFormat, octetCounted, renderRecord, type StreamRecord, syslogRecord } from './formats.ts';
import { putNdjsonObjects } from './s3.ts';
import type { StreamFilter } from './schemas.ts';
import * as store from './store.ts';
import { type Destination, sendHec, sendHttps, sendSyslog, timeoutMs } from './transports.ts';

/** Rows read and sent per batch. */
const batchRows = 1000;

/** How long a delivery holds a cursor: a few attempts' timeouts; a delivery that died lets it go when it ends. */
const leaseSeconds = () => Math.ceil(timeoutMs() / 1000) * 3 + 30;

/** A cursor another delivery holds is tried again this much later: that delivery may have read the head already. */
const busyDelaySeconds = 2;

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
      const events = records.map((record) => {
        const rendered = renderRecord(record, format);
        const at = record.type === 'audit' ? record.row.timestamp : record.at;
        return JSON.stringify({
          time: Date.parse(at) / 1000,
          host: 'logbook',
          source: 'logbook',
          sourcetype: `logbook:audit:${format}`,
          event: jsonFormat(format) ? JSON.parse(rendered) : rendered,
        });
      });
      return sendHec(destination, secret ?? '', events.join('\n'));
    }
    case 's3':
      return putNdjsonObjects(
        destination.endpoint,
        records[0]!.type === 'audit' ? records[0]!.row.orgId : records[0]!.orgId,
        byHour(records, format),
      );
  }
}

/** The records as NDJSON lines grouped by the hour of their time (`YYYY/MM/DD/HH`), with their seq range. */
function byHour(records: StreamRecord[], format: store.StreamRow['format']) {
  const groups = new Map<string, { hour: string; firstSeq: number; lastSeq: number; lines: string[] }>();
  for (const record of records) {
    const at = record.type === 'audit' ? record.row.timestamp : record.at;
    const seq = record.type === 'audit' ? record.row.seq : record.seq;
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

/**
 * Drains one destination's cursor in one organization: claims it (one sender per cursor keeps the order), sends
 * batch after batch from the cursor up to the head, each followed by the anchors it completes, and moves the cursor
 * after each batch the receiver took. A failure keeps the cursor and arms the retry.
 */
export async function deliverCursor(
  db: Db,
  destination: store.DeliverableStream,
  orgId: string,
  now = new Date(),
): Promise<CursorOutcome> {
  const key = { streamId: destination.id, orgId };
  const cursor = await store.claimCursor(db, destination.id, orgId, leaseSeconds());
  if (!cursor) {
    await enqueue({ kind: deliverJobKind, orgId }, busyDelaySeconds);
    return 'busy';
  }
  // After a failure the retry is armed for its time: writes before then do not hammer a receiver that is down.
  if (cursor.retryAt && cursor.retryAt > now) {
    await store.releaseCursor(db, key);
    return 'waiting';
  }
  let delivered = cursor.deliveredSeq;
  // The time of the oldest row this run sends, for the lag metric.
  let oldest: string | undefined;
  try {
    const secret = await openedSecret(db, destination);
    for (;;) {
      const rows = await selectChainPage(db, orgId, {
        afterSeq: delivered,
        untilSeq: null,
        rows: batchRows,
        bytes: db.maxResultBytes,
      });
      const last = rows.at(-1)?.seq ?? delivered;
      const anchors = await store.selectAnchorsToStream(db, key, last);
      if (rows.length === 0 && anchors.length === 0) break;
      oldest ??= rows[0]?.timestamp;
      const records: StreamRecord[] = rows
        .filter((row) => passesFilter(destination.filter, row))
        .map((row) => ({ type: 'audit', row }));
      for (const { anchoredAt: _, ...anchor } of anchors) records.push(anchor);
      if (records.length > 0) await sendRecords(destination, secret, records);
      countMetric('AuditStreamRowsDelivered', records.length);
      if (rows.length > 0 && !(await store.advanceCursor(db, { ...key, epoch: cursor.epoch }, last, leaseSeconds())))
        return 'replayed';
      if (anchors.length > 0) await store.advanceAnchors(db, key, anchors.at(-1)!.anchoredAt);
      delivered = last;
      if (rows.length < batchRows && anchors.length < 100) break;
    }
  } catch (error) {
    recordLag(oldest);
    countMetric('AuditStreamDeliveryFailures');
    const message = error instanceof Error ? error.message : String(error);
    const delay = retryDelaySeconds(cursor.attempts);
    await store.failCursor(db, key, message, new Date(Date.now() + delay * 1000));
    await enqueue({ kind: deliverJobKind, orgId }, delay);
    logger.warn('[audit-streams] A delivery failed; the cursor stays and the retry is armed', {
      streamId: destination.id,
      orgId,
      afterSeq: delivered,
      retryInSeconds: delay,
      error: message,
    });
    return 'failed';
  }
  recordLag(oldest);
  await store.releaseCursor(db, key);
  return 'delivered';
}

/** The lag metric: how long the oldest row of this run waited for its destination (its alarm: docs/operations.md). */
function recordLag(oldest: string | undefined): void {
  if (oldest) gaugeMetric('AuditStreamLagSeconds', Math.max(0, (Date.now() - Date.parse(oldest)) / 1000));
}

/** The job: every destination of the organization, each from its own cursor, side by side. */
export async function deliverOrganization(db: Db, orgId: string): Promise<CursorOutcome[]> {
  jobStarted(orgId);
  const destinations = await store.selectDestinationsOf(db, orgId);
  return Promise.all(destinations.map((destination) => deliverCursor(db, destination, orgId)));
}
