/**
 * `npm run bench:streaming [-- --orgs 20 --rows 20000 --rate 10000 --seconds 60 --sustained-orgs 100]`: how fast
 * audit streams catch up with a backlog (a receiver that was down), and how they keep up with a sustained write load,
 * each beside a baseline measured in the same run on the same server:
 *
 * - --rows audit rows across --orgs organizations are written while no receiver listens; then a local syslog-TCP
 *   receiver (octet-counted frames) and a local HTTPS-shaped NDJSON receiver (plain HTTP on loopback, signed) take
 *   them, every organization's delivery running at once as the work queue would run them;
 * - the baseline is reading the same chain pages alone (selectChainPage, 1,000 rows a page), the floor of any
 *   delivery from the database.
 *
 * - sustained: --rate audit rows a second (one statement every 100 ms, spread over --sustained-orgs organizations)
 *   for --seconds, each statement's seal arming its organizations' delivery jobs as in production (the coalesced job
 *   per organization, run in this process as the local work queue runs it), to both receivers: the rows a second
 *   that reached them and the p95 of each row's lag (arrival minus its timestamp), beside the rows a second the
 *   writer wrote and the p95 of its statements' own time.
 *
 * Every row is counted at the receiver: nothing missing, nothing doubled. Runs the production delivery
 * (shared/audit-streams/delivery.ts) on a scratch database and drops it.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { parseArgs } from 'node:util';
import { onAuditSealed } from '#shared/audit/sealed.ts';
import { type AuditRowInput, insertAuditRows, selectChainPage } from '#shared/audit/store.ts';
import { armAfterSeal } from '#shared/audit-streams/arm.ts';
import { deliverOrganization } from '#shared/audit-streams/delivery.ts';
import { insertCursors, insertStream } from '#shared/audit-streams/store.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { dropLocalJobs, runJobsLocally } from '#shared/queue/work-queue.ts';
import { loadAverage, ms, number, positive, ratio, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { percentiles, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    orgs: { type: 'string', default: '20' },
    rows: { type: 'string', default: '20000' },
    rate: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '60' },
    'sustained-orgs': { type: 'string', default: '100' },
  },
  strict: true,
});
const orgCount = positive('orgs', args.orgs);
const rowCount = positive('rows', args.rows);
const rate = positive('rate', args.rate);
const seconds = positive('seconds', args.seconds);
const sustainedOrgCount = positive('sustained-orgs', args['sustained-orgs']);
const targetRowsPerSecond = 20_000;
const targetLagSeconds = 5;

/** A receiver that counts (orgId, seq) pairs, so a missing or doubled row shows. */
function tally() {
  const seen = new Set<string>();
  let received = 0;
  /** Each record's lag: its arrival here minus its timestamp (the row's, as the database wrote it). */
  const lags: number[] = [];
  return {
    lags,
    add(json: string) {
      const record = JSON.parse(json) as { orgId: string; seq: number; timestamp?: string };
      seen.add(`${record.orgId}:${record.seq}`);
      received += 1;
      if (record.timestamp) lags.push(Date.now() - Date.parse(record.timestamp));
    },
    reset() {
      seen.clear();
      received = 0;
      lags.length = 0;
    },
    get distinct() {
      return seen.size;
    },
    get received() {
      return received;
    },
  };
}

async function syslogReceiver() {
  const counted = tally();
  const server = createTcpServer((socket) => {
    let buffer = Buffer.alloc(0);
    socket.on('data', (part: Buffer) => {
      buffer = Buffer.concat([buffer, part]);
      for (;;) {
        const space = buffer.indexOf(0x20);
        if (space === -1) break;
        const length = Number(buffer.subarray(0, space).toString('ascii'));
        if (buffer.length < space + 1 + length) break;
        const frame = buffer.subarray(space + 1, space + 1 + length).toString('utf8');
        counted.add(frame.slice(frame.indexOf('{"type"')));
        buffer = buffer.subarray(space + 1 + length);
      }
    });
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { counted, endpoint: `127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

async function ndjsonReceiver() {
  const counted = tally();
  const server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (part: string) => {
      body += part;
    });
    req.on('end', () => {
      for (const line of body.split('\n')) if (line) counted.add(line);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { counted, endpoint: `http://127.0.0.1:${port}/ingest`, close: () => server.close() };
}

async function seed(db: Db, count = orgCount): Promise<{ partnerId: string; orgIds: string[] }> {
  const { rows } = await db.query<{ id: string }>(
    "INSERT INTO partners (name) VALUES ('Bench MSP') RETURNING id::text",
  );
  const partnerId = rows[0]!.id;
  const orgIds: string[] = [];
  for (let n = 0; n < count; n++) {
    const org = await db.query<{ id: string }>(
      'INSERT INTO organizations (partner_id, name) VALUES (:partnerId::uuid, :name::text) RETURNING id::text',
      { partnerId, name: `Bench org ${n}` },
    );
    orgIds.push(org.rows[0]!.id);
  }
  return { partnerId, orgIds };
}

const auditRow = (orgId: string, n: number): AuditRowInput => ({
  orgId,
  timestamp: null,
  actorType: 'user',
  actorId: '00000000-0000-0000-0000-000000000001',
  actorEmail: 'bench@example.test',
  action: 'device.update',
  resourceType: 'device',
  resourceId: null,
  resourceName: `device ${n}`,
  details: { n },
  ipAddress: '203.0.113.9',
  userAgent: 'bench',
  result: 'success',
  errorMessage: null,
});

async function writeBacklog(db: Db, orgIds: string[]): Promise<void> {
  const perOrg = Math.ceil(rowCount / orgIds.length);
  for (const orgId of orgIds)
    for (let written = 0; written < perOrg; written += 500) {
      const rows = Array.from({ length: Math.min(500, perOrg - written) }, (_, n) => auditRow(orgId, written + n));
      await insertAuditRows(db, rows);
    }
}

/** A partner destination of each receiver's kind, delivering what is written after it (cursors at the heads). */
async function createDestinations(
  db: Db,
  partnerId: string,
  receivers: readonly (readonly ['syslog-tcp' | 'https', 'rfc5424' | 'ndjson', { endpoint: string }])[],
  fromSeq: number | undefined,
) {
  for (const [type, format, receiver] of receivers)
    await db.transaction(async (tx) => {
      const stream = await insertStream(
        tx,
        {
          partnerId,
          orgId: null,
          name: type,
          type,
          format,
          endpoint: receiver.endpoint,
          caCertificate: null,
          streams: ['audit'],
          filter: {},
        },
        type === 'https' ? { secret: 'bench-hmac-key-0123456789', sealed: false } : null,
      );
      await insertCursors(tx, stream, ['audit'], fromSeq);
    });
}

/**
 * `rate` rows a second for `seconds`, one statement every 100 ms spread over the organizations, on the writer's own
 * connections (as the API's functions have theirs, apart from the worker's).
 */
async function writeAtRate(writer: Db, orgIds: string[]) {
  const perTick = Math.max(1, Math.round(rate / 10));
  const statementMs: number[] = [];
  let written = 0;
  const started = Date.now();
  for (let tick = 0; Date.now() - started < seconds * 1000; tick++) {
    const due = started + tick * 100;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    const rows = Array.from({ length: perTick }, (_, n) => auditRow(orgIds[(written + n) % orgIds.length]!, n));
    const write = await timed(() => insertAuditRows(writer, rows));
    statementMs.push(write.ms);
    written += rows.length;
  }
  return { written, writingMs: Date.now() - started, statementMs, started };
}

/**
 * The sustained load delivered as the writes arm it (the seals' listener, the jobs run here as the local work queue
 * runs them, on the delivery's connections); waits until both receivers hold every row, or two minutes more.
 */
async function sustainedLoad(db: Db, writer: Db, orgIds: string[], receivers: ReturnType<typeof tally>[]) {
  onAuditSealed(armAfterSeal);
  runJobsLocally(async (job) => {
    await deliverOrganization(db, (job as { orgId: string } & typeof job).orgId);
  });
  for (const receiver of receivers) receiver.reset();
  const load = await writeAtRate(writer, orgIds);
  const deadline = Date.now() + 120_000;
  while (receivers.some((receiver) => receiver.distinct < load.written) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  return { ...load, drainedMs: Date.now() - load.started };
}

async function main() {
  process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
  process.env.ENROLLMENT_KEY_SEAL_KEY ||= Buffer.alloc(32, 7).toString('base64');
  const scratch = await createScratchDatabase('streaming');
  const db = createPgDb({ connectionString: scratch.url, max: 8, applicationName: 'logbook-bench-streaming' });
  const writer = createPgDb({ connectionString: scratch.url, max: 4, applicationName: 'logbook-bench-writer' });
  const syslog = await syslogReceiver();
  const https = await ndjsonReceiver();
  try {
    const { partnerId, orgIds } = await seed(db);
    const backlog = await timed(() => writeBacklog(db, orgIds));
    const total = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_logs')).rows[0]!.n;

    const baseline = await timed(async () => {
      let read = 0;
      await Promise.all(
        orgIds.map(async (orgId) => {
          for (let after = 0; ; ) {
            const page = await selectChainPage(db, orgId, { afterSeq: after, untilSeq: null, rows: 1000 });
            read += page.length;
            if (page.length < 1000) break;
            after = page.at(-1)!.seq;
          }
        }),
      );
      return read;
    });

    const results: string[][] = [];
    for (const [type, format, receiver] of [
      ['syslog-tcp', 'rfc5424', syslog],
      ['https', 'ndjson', https],
    ] as const) {
      await createDestinations(db, partnerId, [[type, format, receiver]], 1);
      const run = await timed(() => Promise.all(orgIds.map((orgId) => deliverOrganization(db, orgId))));
      // The other destination already took its rows: only this one's count.
      const rate = (total / run.ms) * 1000;
      results.push([
        `catch-up, ${type} (${format})`,
        `${number(rate)} rows/s`,
        `${number((total / baseline.ms) * 1000)} rows/s`,
        ratio(rate / ((total / baseline.ms) * 1000)),
        `${receiver.counted.received === total && receiver.counted.distinct === total ? 'all' : 'NOT all'} ${number(total)} rows, once`,
        `${verdict(rate >= targetRowsPerSecond)} (≥ ${number(targetRowsPerSecond)} rows/s)`,
      ]);
    }
    console.log(
      `\nAudit streaming: ${number(total)} rows across ${orgCount} organizations (written in ${number(backlog.ms)} ms), ${scratch.server}, load ${loadAverage()}`,
    );
    console.log(
      formatTable(['figure', 'measured', 'baseline: chain pages read alone', 'ratio', 'received', 'target'], results),
    );

    // The baseline: the same load written to organizations no destination serves, before any write arms a delivery.
    const alone = await writeAtRate(writer, (await seed(db, sustainedOrgCount)).orgIds);
    // The sustained load, to new organizations of a partner whose destinations exist before the first write.
    const sustained = await seed(db, sustainedOrgCount);
    await createDestinations(
      db,
      sustained.partnerId,
      [
        ['syslog-tcp', 'rfc5424', syslog],
        ['https', 'ndjson', https],
      ],
      undefined,
    );
    const load = await sustainedLoad(db, writer, sustained.orgIds, [syslog.counted, https.counted]);
    const writtenRate = (load.written / load.writingMs) * 1000;
    const aloneRate = (alone.written / alone.writingMs) * 1000;
    const rows: string[][] = [];
    for (const [name, counted] of [
      ['syslog-tcp (rfc5424)', syslog.counted],
      ['https (ndjson)', https.counted],
    ] as const) {
      const reached = (counted.distinct / load.drainedMs) * 1000;
      const lagP95 = percentiles(counted.lags).p95;
      rows.push([
        `sustained, ${name}`,
        `${number(reached)} rows/s reached it (${number(writtenRate)} written); lag p95 ${ms(lagP95)}`,
        `${number(aloneRate)} rows/s written; statement p95 ${ms(percentiles(alone.statementMs).p95)} (with streams ${ms(percentiles(load.statementMs).p95)})`,
        `${counted.distinct === load.written ? 'all' : `${number(counted.distinct)} of`} ${number(load.written)} rows, ${number(counted.received - counted.distinct)} doubled`,
        `${verdict(writtenRate >= rate && lagP95 < targetLagSeconds * 1000)} (${number(rate)} rows/s, lag p95 < ${targetLagSeconds} s)`,
      ]);
    }
    console.log(
      `\nSustained: ${number(rate)} rows/s asked for ${seconds} s across ${sustainedOrgCount} organizations; written in ${number(load.writingMs)} ms, all delivered after ${number(load.drainedMs)} ms; load ${loadAverage()}`,
    );
    console.log(
      formatTable(['figure', 'measured', 'baseline: the writer alone, no destination', 'received', 'target'], rows),
    );
  } finally {
    dropLocalJobs();
    syslog.close();
    https.close();
    await writer.close();
    await db.close();
    await scratch.drop();
  }
}

await main();
