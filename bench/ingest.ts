/**
 * `npm run bench:ingest [-- --seconds 5 --agents 8 --rows 1000000 --samples 40 --streamed]`: the agent telemetry figures,
 * each beside a baseline measured in the same run on the same server, with its target:
 *
 * - agent-log ingest: `--agents` agents each POSTing 500 entries per request through the local API Gateway
 *   (token, validation, budget, five 100-row inserts) against the same 100-row INSERT statements
 *   (insertLogBatch) issued straight to the database by as many writers;
 * - event-log ingest with dedup: PUTs of 1000 events of which 200 were sent before (ignored by the unique key),
 *   against the same ten INSERT ... ON CONFLICT DO NOTHING statements in one transaction, straight to the database;
 * - diagnostic-log queries on one device holding --rows entries: GET /devices/:id/diagnostic-logs through the
 *   gateway (user token, tenancy, page and total) against a bare SELECT ... ORDER BY ... LIMIT with count(*).
 *
 * The gateway, its handlers and the load run in this process, as the HTTP tests do; the database is a scratch
 * database (on DATABASE_URL's server, or an embedded PostgreSQL it starts) that is dropped afterwards.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { routes } from '#functions/routes.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { startHttpGateway } from '#infra/local/http-gateway.ts';
import { signUserToken } from '#infra/local/tokens.ts';
import type { LogEntry } from '#shared/agent-logs/schemas.ts';
import { insertLogBatch } from '#shared/agent-logs/store.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { batchesOf } from '#shared/db/insert-batch.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import type { DeviceEvent } from '#shared/event-logs/schemas.ts';
import { insertEventBatch } from '#shared/event-logs/store.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { insertFleetKey } from './support/fleet-key.ts';
import { ms, number, positive, status, statusDone, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { serverSettings } from './support/server-settings.ts';
import { formatTable } from './support/table.ts';
import { latency } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    agents: { type: 'string', default: '8' },
    rows: { type: 'string', default: '1000000' },
    samples: { type: 'string', default: '40' },
    // The organization's logs numbered for a destination streaming them (docs/audit-streaming.md "Streams").
    streamed: { type: 'boolean', default: false },
  },
  strict: true,
});
const seconds = positive('seconds', args.seconds);
const agentCount = positive('agents', args.agents);
const deviceRows = positive('rows', args.rows);
const samples = positive('samples', args.samples);

// Targets.
const targets = { logRowsPerSecond: 20_000, eventRowsPerSecond: 10_000, queryP95Ms: 50 };
const logsPerRequest = 500;
const eventsPerRequest = 1000;
const repeatedEvents = 200;
const loadChunk = 100_000;

interface Agent {
  agentId: string;
  deviceId: string;
  orgId: string;
  token: string;
}

const components = ['heartbeat', 'updater', 'ws', 'scripts', 'patching', 'monitor'] as const;
const logLevels = ['debug', 'info', 'info', 'info', 'info', 'warn', 'warn', 'error'] as const;

/** A request's worth of diagnostic log entries, as an agent sends them. */
function logBatch(): LogEntry[] {
  const now = Date.now();
  return Array.from({ length: logsPerRequest }, (_, i) => ({
    timestamp: new Date(now - (logsPerRequest - i) * 10).toISOString(),
    level: logLevels[i % logLevels.length]!,
    component: components[i % components.length]!,
    message: `Checked in with wss://rmm.example.net in ${(i * 7) % 900} ms; queue depth ${i % 17}, ${i % 3} retries pending`,
    fields: { attempt: i % 5, latencyMs: (i * 7) % 900, queue: 'default' },
    agentVersion: '2.4.1',
  }));
}

/** Events numbered from `first`, as a Windows agent relays them from its security log. */
function events(first: number, count: number): DeviceEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const n = first + i;
    return {
      timestamp: new Date(Date.now() - 60_000 + (n % 60_000)).toISOString(),
      level: n % 10 === 0 ? 'error' : 'warning',
      category: 'security',
      source: 'Microsoft-Windows-Security-Auditing',
      eventId: String(n),
      message: `An account failed to log on. Subject: S-1-5-18. Logon Type: 3. Account: user${n % 500}. Failure: 0xC000006D.`,
      details: { recordId: n, logonType: 3, workstation: `WS-${n % 200}` },
    };
  });
}

/** Runs `worker(i)` for each of `count` workers until `duration` seconds passed; returns what they counted per second. */
async function rate(count: number, duration: number, worker: (i: number, until: () => boolean) => Promise<number>) {
  const started = performance.now();
  const deadline = started + duration * 1000;
  const done = await Promise.all(
    Array.from({ length: count }, (_, i) => worker(i, () => performance.now() < deadline)),
  );
  return done.reduce((a, b) => a + b, 0) / ((performance.now() - started) / 1000);
}

/** Two interleaved rounds of each (after a short warm-up), so drift (table growth, checkpoints) falls on both alike. */
async function compare(
  name: string,
  http: (duration: number) => Promise<number>,
  raw: (duration: number) => Promise<number>,
) {
  status(`${name}: warming up ...`);
  await http(1);
  await raw(1);
  const totals = { http: 0, raw: 0 };
  for (let round = 0; round < 2; round++) {
    status(`${name}: round ${round + 1} of 2 ...`);
    totals.raw += await raw(seconds);
    totals.http += await http(seconds);
  }
  statusDone();
  return { http: totals.http / 2, raw: totals.raw / 2 };
}

async function logIngest(url: string, appUrl: string, agents: Agent[]): Promise<string[]> {
  const body = JSON.stringify({ logs: logBatch() });
  const entries = logBatch();
  const http = (duration: number) =>
    rate(agents.length, duration, async (i, running) => {
      const agent = agents[i]!;
      let rows = 0;
      while (running()) {
        const reply = await fetch(`${url}/api/v1/agents/${agent.agentId}/logs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
          body,
        });
        const receipt = (await reply.json()) as { received?: number };
        if (reply.status !== 201) throw new Error(`logs: ${reply.status} ${JSON.stringify(receipt)}`);
        rows += receipt.received!;
      }
      return rows;
    });
  const db = createPgDb({ connectionString: appUrl, max: agents.length });
  const raw = (duration: number) =>
    rate(agents.length, duration, async (i, running) => {
      const device = { id: agents[i]!.deviceId, orgId: agents[i]!.orgId };
      let rows = 0;
      while (running()) for (const batch of batchesOf(entries)) rows += await insertLogBatch(db, device, batch.items);
      return rows;
    });
  try {
    const figures = await compare('agent-log ingest', http, raw);
    return [
      `  agent logs, ${agents.length} agents x ${logsPerRequest} entries per POST`,
      `${number(figures.http)} rows/s`,
      `${number(figures.raw)} rows/s`,
      `${Math.round((figures.http / figures.raw) * 100)}%`,
      `>= ${number(targets.logRowsPerSecond)} rows/s`,
      verdict(figures.http >= targets.logRowsPerSecond),
    ];
  } finally {
    await db.close();
  }
}

async function eventIngest(url: string, appUrl: string, admin: Db, agents: Agent[]): Promise<string[]> {
  // Each agent (and each baseline writer, on devices of its own) numbers its events on; each request repeats the
  // last 200 events of the one before, as an agent resending after a lost reply does.
  const next = new Map<string, number>();
  const submission = (deviceId: string) => {
    const first = next.get(deviceId) ?? 0;
    next.set(deviceId, first + eventsPerRequest - repeatedEvents);
    return events(first, eventsPerRequest);
  };
  const http = (duration: number) =>
    rate(agents.length, duration, async (i, running) => {
      const agent = agents[i]!;
      let submitted = 0;
      while (running()) {
        const reply = await fetch(`${url}/api/v1/agents/${agent.agentId}/eventlogs`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ events: submission(agent.deviceId) }),
        });
        const receipt = (await reply.json()) as { count?: number };
        if (reply.status !== 200) throw new Error(`eventlogs: ${reply.status} ${JSON.stringify(receipt)}`);
        if (receipt.count! < eventsPerRequest - repeatedEvents)
          throw new Error(`eventlogs: only ${receipt.count} of ${eventsPerRequest} stored`);
        submitted += eventsPerRequest;
      }
      return submitted;
    });
  const db = createPgDb({ connectionString: appUrl, max: agents.length });
  const rawDevices = agents.map((agent) => ({ id: randomUUID(), orgId: agent.orgId }));
  const raw = (duration: number) =>
    rate(agents.length, duration, async (i, running) => {
      const device = rawDevices[i]!;
      let submitted = 0;
      while (running()) {
        const batch = submission(device.id);
        await db.transaction(async (tx) => {
          for (const part of batchesOf(batch)) await insertEventBatch(tx, device, part.items);
        });
        submitted += eventsPerRequest;
      }
      return submitted;
    });
  try {
    // The baseline writes for devices of its own (in the agents' organization and site).
    for (const device of rawDevices) {
      await admin.query(
        `INSERT INTO devices (id, org_id, site_id, hostname) SELECT :id::uuid, :orgId::uuid, site_id, 'raw-' || :id::text FROM devices WHERE org_id = :orgId::uuid LIMIT 1`,
        device,
      );
    }
    const figures = await compare('event-log ingest', http, raw);
    return [
      `  device events with dedup, ${agents.length} agents x ${eventsPerRequest} per PUT (${repeatedEvents} repeats)`,
      `${number(figures.http)} rows/s`,
      `${number(figures.raw)} rows/s`,
      `${Math.round((figures.http / figures.raw) * 100)}%`,
      `>= ${number(targets.eventRowsPerSecond)} rows/s`,
      verdict(figures.http >= targets.eventRowsPerSecond),
    ];
  } finally {
    await db.close();
  }
}

/** Loads `count` entries onto one device straight into agent_logs, one a second up to now, `loadChunk` per statement. */
async function loadDevice(admin: Db, device: { id: string; orgId: string }, count: number) {
  const started = performance.now();
  for (let first = 1; first <= count; first += loadChunk) {
    const last = Math.min(first + loadChunk - 1, count);
    await admin.query(
      `INSERT INTO agent_logs (device_id, org_id, timestamp, level, component, message, fields, agent_version)
       SELECT :deviceId::uuid, :orgId::uuid, now() - (:count::int - i) * interval '1 second',
              (ARRAY['debug', 'info', 'info', 'info', 'info', 'warn', 'warn', 'error'])[1 + i % 8]::agent_log_level,
              (ARRAY['heartbeat', 'updater', 'ws', 'scripts', 'patching', 'monitor'])[1 + i % 6],
              CASE WHEN i % 100000 = 7 THEN 'Quarantined a file flagged by the scanner (' || i || ')'
                   ELSE 'Checked in with wss://rmm.example.net in ' || i % 900 || ' ms; queue depth ' || i % 17 END,
              jsonb_build_object('attempt', i % 5, 'latencyMs', i % 900), '2.4.1'
         FROM generate_series(:first::int, :last::int) AS i`,
      { deviceId: device.id, orgId: device.orgId, count, first, last },
    );
    const elapsed = (performance.now() - started) / 1000;
    status(`loading ${number(count)} entries onto one device: ${number(last)} (${number(last / elapsed)} rows/s)`);
  }
  statusDone();
}

async function diagnosticQueries(
  url: string,
  admin: Db,
  appUrl: string,
  device: Agent & { partnerId: string },
): Promise<string[][]> {
  await loadDevice(admin, { id: device.deviceId, orgId: device.orgId }, deviceRows);
  status('VACUUM ANALYZE agent_logs ...');
  await admin.query('VACUUM ANALYZE agent_logs');
  await admin.query('VACUUM ANALYZE agent_log_counts');
  statusDone();
  const token = await signUserToken({
    sub: randomUUID(),
    email: 'tech@bench.example',
    name: 'Bench Tech',
    role: 'org_technician',
    scope: 'organization',
    partnerId: device.partnerId,
    orgId: device.orgId,
  });
  // A day in the middle of the device's entries, starting and ending off the hour.
  const middle = Date.now() - (deviceRows / 2) * 1000;
  const day = {
    since: new Date(middle - 12 * 3600_000 - 17 * 60_000).toISOString(),
    until: new Date(middle + 12 * 3600_000 - 17 * 60_000).toISOString(),
  };
  const cases: { name: string; query: string; informational?: boolean }[] = [
    { name: 'page 1 (50 newest)', query: '' },
    { name: 'page 100 (offset 4,950)', query: 'page=100' },
    { name: 'limit=1000', query: 'limit=1000' },
    { name: 'level=warn,error', query: 'level=warn,error' },
    { name: 'component=updater', query: 'component=updater' },
    { name: 'a day (since/until off the hour)', query: `since=${day.since}&until=${day.until}` },
    { name: 'level + component + day', query: `level=warn,error&component=ws&since=${day.since}&until=${day.until}` },
    { name: 'search for a rare word', query: 'search=quarantined' },
    // Not a target: an exact total of a million matches reads a million rows (docs/agent-logs.md).
    { name: 'search for a word in every entry', query: 'search=queue%20depth', informational: true },
  ];
  const db = createPgDb({ connectionString: appUrl, max: 2 });
  const bare = () =>
    Promise.all([
      db.query('SELECT * FROM agent_logs WHERE device_id = :id::uuid ORDER BY timestamp DESC, id DESC LIMIT 50', {
        id: device.deviceId,
      }),
      db.query('SELECT count(*) FROM agent_logs WHERE device_id = :id::uuid', { id: device.deviceId }),
    ]);
  const lines: string[][] = [];
  try {
    const baseline = await latency(bare, samples);
    for (const c of cases) {
      status(`diagnostic-log query: ${c.name} ...`);
      const path = `${url}/api/v1/devices/${device.deviceId}/diagnostic-logs${c.query ? `?${c.query}` : ''}`;
      let total = 0;
      const measured = await latency(async () => {
        const reply = await fetch(path, { headers: { authorization: `Bearer ${token}` } });
        const page = (await reply.json()) as { pagination?: { total: number } };
        if (reply.status !== 200) throw new Error(`diagnostic-logs: ${reply.status} ${JSON.stringify(page)}`);
        total = page.pagination!.total;
      }, samples);
      lines.push([
        `  ${c.name}, total ${number(total)}`,
        `p95 ${ms(measured.p95)} (p50 ${ms(measured.p50)})`,
        `p95 ${ms(baseline.p95)}`,
        `${(measured.p95 / baseline.p95).toFixed(1)}x`,
        c.informational ? '(none: informational)' : `p95 < ${targets.queryP95Ms} ms`,
        c.informational ? '' : verdict(measured.p95 < targets.queryP95Ms),
      ]);
    }
  } finally {
    statusDone();
    await db.close();
  }
  return lines;
}

async function main() {
  const started = performance.now();
  const scratch = await createScratchDatabase('ingest');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  let gateway: Awaited<ReturnType<typeof startHttpGateway>> | undefined;
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    const appUrl = roleUrls(scratch.url).app;
    process.env.APP_DATABASE_URL = appUrl;
    process.env.JWT_SECRET ??= randomBytes(32).toString('base64url');
    process.env.LOG_LEVEL ??= 'WARN';
    const server = await serverSettings(admin, scratch.server);

    // One organization; its ingest budgets raised so the benchmark measures throughput, not flood protection.
    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = await admin.transaction((tx) =>
      insertOrganizationWithSite(tx, { partnerId: partner.id, name: 'Bench Corp' }, { name: 'Headquarters' }),
    );
    await admin.query(
      'INSERT INTO agent_ingest_limits (org_id, logs_per_device_hour, events_per_device_hour) VALUES (:orgId::uuid, 10000000, 10000000)',
      { orgId: org.id },
    );
    if (args.streamed)
      await admin.query(
        `INSERT INTO log_stream_heads (org_id, source, seq) VALUES (:orgId::uuid, 'device-events', 0), (:orgId::uuid, 'agent-logs', 0)`,
        { orgId: org.id },
      );
    const key = await insertFleetKey(admin, org.id);

    gateway = await startHttpGateway({ port: 0, host: '127.0.0.1', routes });
    const url = gateway.url;
    const enroll = async (hostname: string): Promise<Agent> => {
      const reply = await fetch(`${url}/api/v1/agents/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enrollmentKey: key, hostname }),
      });
      const body = (await reply.json()) as Omit<Agent, 'orgId'>;
      if (reply.status !== 201) throw new Error(`enroll: ${reply.status} ${JSON.stringify(body)}`);
      return { ...body, orgId: org.id };
    };
    const agents: Agent[] = [];
    for (let i = 0; i < agentCount; i++) agents.push(await enroll(`WS-${String(i).padStart(4, '0')}`));

    const logs = await logIngest(url, appUrl, agents);
    const events = await eventIngest(url, appUrl, admin, agents);
    const queried = await enroll('BIG-LOGGER');
    const queries = await diagnosticQueries(url, admin, appUrl, { ...queried, partnerId: partner.id });

    console.log(`
Logbook ingest benchmark (${new Date().toISOString().slice(0, 16)}Z): ${server}; ${availableParallelism()} CPUs shared by the server, the gateway and this client.
Ingest: HTTP end to end through the local API Gateway (this process) against the same INSERT statements sent straight to the
database by as many writers; ${seconds} s per round, two interleaved rounds each. Queries: p95 of ${samples} requests, baseline a bare
SELECT ... ORDER BY timestamp DESC LIMIT 50 with count(*) over the device.

${formatTable(
  ['', 'figure', 'baseline (same run)', 'ratio', 'target', ''],
  [
    ['Ingest'],
    logs,
    events,
    [''],
    [`Diagnostic-log queries, one device with ${number(deviceRows)} entries`],
    ...queries,
  ],
)}

Done in ${((performance.now() - started) / 1000 / 60).toFixed(1)} min.`);
  } finally {
    await gateway?.close();
    await closeAppDb();
    await admin.close();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error('bench:ingest failed:', error);
  process.exit(1);
});
