/**
 * `npm run bench:streaming [-- --orgs 20 --rows 20000]`: how fast audit streams catch up with a backlog (a receiver
 * that was down), beside a baseline measured in the same run on the same server:
 *
 * - --rows audit rows across --orgs organizations are written while no receiver listens; then a local syslog-TCP
 *   receiver (octet-counted frames) and a local HTTPS-shaped NDJSON receiver (plain HTTP on loopback, signed) take
 *   them, every organization's delivery running at once as the work queue would run them;
 * - the baseline is reading the same chain pages alone (selectChainPage, 1,000 rows a page), the floor of any
 *   delivery from the database.
 *
 * Every row is counted at the receiver: nothing missing, nothing doubled. Runs the production delivery
 * (shared/audit-streams/delivery.ts) on a scratch database and drops it.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { parseArgs } from 'node:util';
import { type AuditRowInput, insertAuditRows, selectChainPage } from '#shared/audit/store.ts';
import { deliverOrganization } from '#shared/audit-streams/delivery.ts';
import { insertCursors, insertStream } from '#shared/audit-streams/store.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { loadAverage, number, positive, ratio, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: { orgs: { type: 'string', default: '20' }, rows: { type: 'string', default: '20000' } },
  strict: true,
});
const orgCount = positive('orgs', args.orgs);
const rowCount = positive('rows', args.rows);
const targetRowsPerSecond = 20_000;

/** A receiver that counts (orgId, seq) pairs, so a missing or doubled row shows. */
function tally() {
  const seen = new Set<string>();
  let received = 0;
  return {
    add(json: string) {
      const record = JSON.parse(json) as { orgId: string; seq: number };
      seen.add(`${record.orgId}:${record.seq}`);
      received += 1;
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

async function seed(db: Db): Promise<{ partnerId: string; orgIds: string[] }> {
  const { rows } = await db.query<{ id: string }>(
    "INSERT INTO partners (name) VALUES ('Bench MSP') RETURNING id::text",
  );
  const partnerId = rows[0]!.id;
  const orgIds: string[] = [];
  for (let n = 0; n < orgCount; n++) {
    const org = await db.query<{ id: string }>(
      'INSERT INTO organizations (partner_id, name) VALUES (:partnerId::uuid, :name::text) RETURNING id::text',
      { partnerId, name: `Bench org ${n}` },
    );
    orgIds.push(org.rows[0]!.id);
  }
  return { partnerId, orgIds };
}

async function writeBacklog(db: Db, orgIds: string[]): Promise<void> {
  const perOrg = Math.ceil(rowCount / orgIds.length);
  for (const orgId of orgIds)
    for (let written = 0; written < perOrg; written += 500) {
      const rows: AuditRowInput[] = Array.from({ length: Math.min(500, perOrg - written) }, (_, n) => ({
        orgId,
        timestamp: null,
        actorType: 'user',
        actorId: '00000000-0000-0000-0000-000000000001',
        actorEmail: 'bench@example.test',
        action: 'device.update',
        resourceType: 'device',
        resourceId: null,
        resourceName: `device ${written + n}`,
        details: { n: written + n },
        ipAddress: '203.0.113.9',
        userAgent: 'bench',
        result: 'success',
        errorMessage: null,
      }));
      await insertAuditRows(db, rows);
    }
}

async function main() {
  process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
  process.env.ENROLLMENT_KEY_SEAL_KEY ||= Buffer.alloc(32, 7).toString('base64');
  const scratch = await createScratchDatabase('streaming');
  const db = createPgDb({ connectionString: scratch.url, max: 8, applicationName: 'logbook-bench-streaming' });
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
        await insertCursors(tx, stream, ['audit'], 1);
      });
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
  } finally {
    syslog.close();
    https.close();
    await db.close();
    await scratch.drop();
  }
}

await main();
