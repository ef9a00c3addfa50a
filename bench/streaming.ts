import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { parseArgs, promisify } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { gunzip as gunzipCallback } from 'node:zlib';
import { unchunk } from '#infra/local/aws-chunked.ts';
import { selfSignedCertificate } from '#infra/local/self-signed-certificate.ts';
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
    kinds: { type: 'string', default: 'syslog-tcp,syslog-tls,https,splunk-hec,s3' },
  },
  strict: true,
});
const orgCount = positive('orgs', args.orgs);
const rowCount = positive('rows', args.rows);
const rate = positive('rate', args.rate);
const seconds = positive('seconds', args.seconds);
const sustainedOrgCount = positive('sustained-orgs', args['sustained-orgs']);
/** The sustained writer's connections: the statements it has in flight at most. */
const writerConnections = 4;
const targetRowsPerSecond = 20_000;
const targetLagSeconds = 5;
const gunzip = promisify(gunzipCallback);

/** A receiver's count: the (orgId, seq) pairs taken (distinct), every record taken, and the p95 of their lag. */
type Count = { distinct: number; received: number; lagP95: number };

/** A receiver that counts (orgId, seq) pairs, so a missing or doubled row shows. */
function tally() {
  const seen = new Set<string>();
  let received = 0;
  /** Each record's lag: its arrival here minus its timestamp (the row's, as the database wrote it). */
  const lags: number[] = [];
  return {
    add(record: { orgId: string; seq: number; timestamp?: string }) {
      seen.add(`${record.orgId}:${record.seq}`);
      received += 1;
      if (record.timestamp) lags.push(Date.now() - Date.parse(record.timestamp));
    },
    reset() {
      seen.clear();
      received = 0;
      lags.length = 0;
    },
    count: (): Count => ({ distinct: seen.size, received, lagP95: lags.length ? percentiles(lags).p95 : 0 }),
  };
}

type Kind = 'syslog-tcp' | 'syslog-tls' | 'https' | 'splunk-hec' | 's3';
const kinds: readonly Kind[] = ['syslog-tcp', 'syslog-tls', 'https', 'splunk-hec', 's3'];

/** The record inside an RFC 5424 frame: the JSON MSG after the header and structured data. */
const frameRecord = (frame: string) => JSON.parse(frame.slice(frame.indexOf('{"type"')));

/** Takes octet-counted frames off a connection (TCP or TLS) and closes its side when the sender ended. */
function syslogConnection(add: (frame: string) => void) {
  return (socket: Socket) => {
    let buffer: Buffer = Buffer.alloc(0);
    socket.on('data', (part: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, part]) : part;
      let at = 0;
      for (;;) {
        const space = buffer.indexOf(0x20, at);
        if (space === -1) break;
        const length = Number(buffer.subarray(at, space).toString('ascii'));
        if (buffer.length < space + 1 + length) break;
        add(buffer.subarray(space + 1, space + 1 + length).toString('utf8'));
        at = space + 1 + length;
      }
      buffer = buffer.subarray(at);
    });
    socket.on('error', () => undefined);
    socket.on('end', () => socket.end());
  };
}

/** An HTTP server taking each request's body (its chunks joined) and answering 200 once it was counted. */
function bodies(take: (body: Buffer, headers: Record<string, string | string[] | undefined>) => Promise<void> | void) {
  return createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (part: Buffer) => chunks.push(part));
    req.on('end', async () => {
      await take(Buffer.concat(chunks), req.headers);
      res.writeHead(200, { etag: '"bench"', 'content-type': 'application/json' }).end('{"text":"Success","code":0}');
    });
  });
}

/**
 * The receivers, in a worker thread of their own (as a SIEM runs on a machine of its own, their parsing does not take
 * the delivery's thread): a syslog receiver over TCP and one over TLS (RFC 5424, octet-counted), an HTTPS-shaped
 * NDJSON receiver (plain HTTP on loopback, signed posts), a Splunk HEC stub and an S3-compatible stub taking gzipped
 * NDJSON puts. Answers the main thread's `count` and `reset` of each.
 */
async function serveReceivers(cert: { cert: string; key: string }) {
  const counts = Object.fromEntries(kinds.map((kind) => [kind, tally()])) as Record<Kind, ReturnType<typeof tally>>;
  const lines = (kind: Kind, text: string) => {
    for (const line of text.split('\n')) if (line) counts[kind].add(JSON.parse(line));
  };
  const servers: Record<Kind, Server> = {
    'syslog-tcp': createTcpServer(syslogConnection((frame) => counts['syslog-tcp'].add(frameRecord(frame)))),
    'syslog-tls': createTlsServer(
      cert,
      syslogConnection((frame) => counts['syslog-tls'].add(frameRecord(frame))),
    ),
    https: bodies((body) => lines('https', body.toString('utf8'))),
    'splunk-hec': bodies((body) => {
      for (const line of body.toString('utf8').split('\n')) if (line) counts['splunk-hec'].add(JSON.parse(line).event);
    }),
    s3: bodies(async (body, headers) => {
      const chunked = String(headers['content-encoding'] ?? '').includes('aws-chunked');
      lines('s3', (await gunzip(chunked ? unchunk(body) : body)).toString('utf8'));
    }),
  };
  const ports: Partial<Record<Kind, number>> = {};
  for (const kind of kinds) {
    await new Promise<void>((resolve) => servers[kind].listen(0, '127.0.0.1', resolve));
    ports[kind] = (servers[kind].address() as { port: number }).port;
  }
  parentPort!.on('message', (message: { id: number; ask: 'count' | 'reset' | 'close'; kind: Kind }) => {
    if (message.ask === 'reset') counts[message.kind].reset();
    if (message.ask === 'close') for (const kind of kinds) servers[kind].close();
    parentPort!.postMessage({ id: message.id, count: counts[message.kind]?.count() });
    if (message.ask === 'close') parentPort!.close();
  });
  parentPort!.postMessage({ ports });
}

/** The receivers' worker, seen from the main thread: each receiver's endpoint, its count and its reset. */
async function startReceivers(cert: { cert: string; key: string }) {
  // The worker runs this file too, through tsx's loader as the main thread does (registered in the worker first).
  const worker = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`,
    { eval: true, workerData: { cert } },
  );
  const ports = await new Promise<Record<Kind, number>>((resolve, reject) => {
    worker.once('message', (message: { ports: Record<Kind, number> }) => resolve(message.ports));
    worker.once('error', reject);
  });
  let asked = 0;
  const answers = new Map<number, (count: Count) => void>();
  worker.on('message', (message: { id?: number; count: Count }) => {
    if (message.id !== undefined) answers.get(message.id)?.(message.count);
    answers.delete(message.id!);
  });
  const ask = (kind: Kind, what: 'count' | 'reset' | 'close') =>
    new Promise<Count>((resolve) => {
      asked += 1;
      answers.set(asked, resolve);
      worker.postMessage({ id: asked, ask: what, kind });
    });
  const endpoints: Record<Kind, string> = {
    'syslog-tcp': `127.0.0.1:${ports['syslog-tcp']}`,
    'syslog-tls': `localhost:${ports['syslog-tls']}`,
    https: `http://127.0.0.1:${ports.https}/ingest`,
    'splunk-hec': `http://127.0.0.1:${ports['splunk-hec']}`,
    s3: 'bench-audit/streams',
  };
  return {
    endpoints,
    /** The S3 stub's URL (AUDIT_S3_ENDPOINT). */
    s3Url: `http://127.0.0.1:${ports.s3}`,
    count: (kind: Kind) => ask(kind, 'count'),
    reset: (kind: Kind) => ask(kind, 'reset'),
    close: async () => {
      await ask('s3', 'close');
      await worker.terminate();
    },
  };
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
  receivers: readonly (readonly [Kind, 'rfc5424' | 'ndjson', string])[],
  fromSeq: number | undefined,
  cert: string,
) {
  for (const [type, format, endpoint] of receivers)
    await db.transaction(async (tx) => {
      const stream = await insertStream(
        tx,
        {
          partnerId,
          orgId: null,
          name: type,
          type,
          format,
          endpoint,
          caCertificate: type === 'syslog-tls' ? cert : null,
          streams: ['audit'],
          filter: {},
        },
        type === 'https' || type === 'splunk-hec' ? { secret: 'bench-hmac-key-0123456789', sealed: false } : null,
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
  // An open load, as a fleet offers it: each tick's statement starts when it is due, whether or not the one before
  // has ended, up to the writer's connections (a statement waiting for a connection counts in its own time).
  const inFlight = new Set<Promise<void>>();
  let written = 0;
  const started = Date.now();
  for (let tick = 0; Date.now() - started < seconds * 1000; tick++) {
    const due = started + tick * 100;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    if (inFlight.size >= writerConnections) await Promise.race(inFlight);
    const rows = Array.from({ length: perTick }, (_, n) => auditRow(orgIds[(written + n) % orgIds.length]!, n));
    written += rows.length;
    const write: Promise<void> = timed(() => insertAuditRows(writer, rows)).then(({ ms }) => {
      statementMs.push(ms);
      inFlight.delete(write);
    });
    inFlight.add(write);
  }
  await Promise.all(inFlight);
  return { written, writingMs: Date.now() - started, statementMs, started };
}

/**
 * The sustained load delivered as the writes arm it (the seals' listener, the jobs run here as the local work queue
 * runs them, on the delivery's connections); waits until both receivers hold every row, or two minutes more.
 */
async function sustainedLoad(
  db: Db,
  writer: Db,
  orgIds: string[],
  receivers: Awaited<ReturnType<typeof startReceivers>>,
  sustainedKinds: readonly Kind[],
) {
  onAuditSealed(armAfterSeal);
  runJobsLocally(async (job) => {
    await deliverOrganization(db, (job as { orgId: string } & typeof job).orgId);
  });
  for (const kind of sustainedKinds) await receivers.reset(kind);
  const load = await writeAtRate(writer, orgIds);
  const deadline = Date.now() + 120_000;
  const behind = async () =>
    (await Promise.all(sustainedKinds.map((kind) => receivers.count(kind)))).some(
      (count) => count.distinct < load.written,
    );
  while ((await behind()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return { ...load, drainedMs: Date.now() - load.started };
}

async function main() {
  process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
  process.env.ENROLLMENT_KEY_SEAL_KEY ||= Buffer.alloc(32, 7).toString('base64');
  const cert = selfSignedCertificate();
  const receivers = await startReceivers(cert);
  // The S3 destination puts to the receivers' stub with the real SDK.
  Object.assign(process.env, {
    AUDIT_S3_ENDPOINT: receivers.s3Url,
    AWS_REGION: 'eu-central-1',
    AWS_ACCESS_KEY_ID: 'AKIDBENCHSTUB',
    AWS_SECRET_ACCESS_KEY: 'bench-stub-secret',
  });
  const scratch = await createScratchDatabase('streaming');
  const db = createPgDb({ connectionString: scratch.url, max: 8, applicationName: 'logbook-bench-streaming' });
  const writer = createPgDb({
    connectionString: scratch.url,
    max: writerConnections,
    applicationName: 'logbook-bench-writer',
  });
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
    const loads: string[] = [];
    const caughtUp = kinds.filter((kind) => args.kinds.split(',').includes(kind));
    for (const type of caughtUp) {
      const format = type.startsWith('syslog') ? 'rfc5424' : 'ndjson';
      await createDestinations(db, partnerId, [[type, format, receivers.endpoints[type]]], 1, cert.cert);
      const run = await timed(() => Promise.all(orgIds.map((orgId) => deliverOrganization(db, orgId))));
      loads.push(loadAverage());
      // The other destinations already took their rows: only this one's count.
      const rate = (total / run.ms) * 1000;
      const counted = await receivers.count(type);
      results.push([
        `catch-up, ${type} (${format})`,
        `${number(rate)} rows/s`,
        `${number((total / baseline.ms) * 1000)} rows/s`,
        ratio(rate / ((total / baseline.ms) * 1000)),
        `${counted.received === total && counted.distinct === total ? 'all' : 'NOT all'} ${number(total)} rows, once`,
        `${verdict(rate >= targetRowsPerSecond)} (≥ ${number(targetRowsPerSecond)} rows/s)`,
      ]);
    }
    console.log(
      `\nAudit streaming: ${number(total)} rows across ${orgCount} organizations (written in ${number(backlog.ms)} ms), ${scratch.server}, load ${loads.join(', ')}`,
    );
    console.log(
      formatTable(['figure', 'measured', 'baseline: chain pages read alone', 'ratio', 'received', 'target'], results),
    );

    // The baseline: the same load written to organizations no destination serves, before any write arms a delivery.
    const alone = await writeAtRate(writer, (await seed(db, sustainedOrgCount)).orgIds);
    // The sustained load, to new organizations of a partner whose destinations exist before the first write.
    const sustained = await seed(db, sustainedOrgCount);
    const sustainedKinds = [
      ['syslog-tls', 'rfc5424'],
      ['https', 'ndjson'],
    ] as const;
    await createDestinations(
      db,
      sustained.partnerId,
      sustainedKinds.map(([type, format]) => [type, format, receivers.endpoints[type]] as const),
      undefined,
      cert.cert,
    );
    const load = await sustainedLoad(
      db,
      writer,
      sustained.orgIds,
      receivers,
      sustainedKinds.map(([type]) => type),
    );
    const writtenRate = (load.written / load.writingMs) * 1000;
    const aloneRate = (alone.written / alone.writingMs) * 1000;
    const rows: string[][] = [];
    for (const [type, format] of sustainedKinds) {
      const counted = await receivers.count(type);
      const reached = (counted.distinct / load.drainedMs) * 1000;
      rows.push([
        `sustained, ${type} (${format})`,
        `${number(reached)} rows/s reached it (${number(writtenRate)} written); lag p95 ${ms(counted.lagP95)}`,
        `${number(aloneRate)} rows/s written; statement p95 ${ms(percentiles(alone.statementMs).p95)} (with streams ${ms(percentiles(load.statementMs).p95)})`,
        `${counted.distinct === load.written ? 'all' : `${number(counted.distinct)} of`} ${number(load.written)} rows, ${number(counted.received - counted.distinct)} doubled`,
        `${verdict(writtenRate >= rate && counted.lagP95 < targetLagSeconds * 1000)} (${number(rate)} rows/s, lag p95 < ${targetLagSeconds} s)`,
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
    await receivers.close();
    await writer.close();
    await db.close();
    await scratch.drop();
  }
}

if (isMainThread) await main();
else await serveReceivers((workerData as { cert: { cert: string; key: string } }).cert);
