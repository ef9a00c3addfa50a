/**
 * `npm run bench:live [-- --queries 200 --agents 10 --concurrent 50 --rounds 5]`: the live-query figures,
 * each beside a baseline measured in the same run:
 *
 * - round trip of a live query through the local stack (HTTP gateway, user token, tenancy, the query row, the
 *   management API, the WebSocket gateway, the simulated agent answering from its in-memory store, $default storing
 *   the answer, the asking function polling for it): p50 and p95 over --queries sequential queries, for the list of
 *   logs, a page of 50 events and a chunked page of 500 events (about 850 KB in 9 chunks); baselines: a bare HTTP
 *   round trip (GET /health), a database-backed route of the same gateway and token (the stored event list), and the
 *   agent computing the same answer in memory;
 * - --concurrent queries at once spread over --agents agents, --rounds times: every one must succeed.
 *
 * Everything runs in this process, as the end-to-end tests do, on a scratch database that is dropped afterwards.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { answer, type RunningAgent, startAgent } from '#demo/agent/agent.ts';
import { answerFrames } from '#demo/agent/answer-frames.ts';
import { type EventStore, generateEventStore } from '#demo/agent/event-store.ts';
import { routes, wsRoutes } from '#functions/routes.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { startHttpGateway } from '#infra/local/http-gateway.ts';
import { signUserToken } from '#infra/local/tokens.ts';
import { startWsGateway, useLocalManagementApi } from '#infra/local/ws-gateway.ts';
import { closeAppDb } from '#shared/db/client.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { polling } from '#shared/live-query/relay.ts';
import { insertFleetKey } from './support/fleet-key.ts';
import { ms, positive, status, statusDone, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { latency, percentiles } from './support/timing.ts';

// `npm run bench` passes its arguments to every benchmark: options of the others are ignored here.
const { values: args } = parseArgs({
  options: {
    queries: { type: 'string', default: '200' },
    agents: { type: 'string', default: '10' },
    concurrent: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
  },
  strict: false,
});
const queries = positive('queries', args.queries);
const agentCount = positive('agents', args.agents);
const concurrent = positive('concurrent', args.concurrent);
const rounds = positive('rounds', args.rounds);

// No latency target is set; these are what a technician clicking through logs should get locally.
const targets = { smallP95Ms: 100, chunkedP95Ms: 400 };

interface Enrolled {
  agentId: string;
  deviceId: string;
  token: string;
}

async function main() {
  const started = performance.now();
  const scratch = await createScratchDatabase('live');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  let http: Awaited<ReturnType<typeof startHttpGateway>> | undefined;
  let ws: Awaited<ReturnType<typeof startWsGateway>> | undefined;
  const agents: RunningAgent[] = [];
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    process.env.APP_DATABASE_URL = roleUrls(scratch.url).app;
    process.env.JWT_SECRET ??= randomBytes(32).toString('base64url');
    process.env.LOG_LEVEL ??= 'WARN';
    const { rows } = await admin.query<{ version: string }>(`SELECT current_setting('server_version') AS version`);

    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = await admin.transaction((tx) =>
      insertOrganizationWithSite(tx, { partnerId: partner.id, name: 'Bench Corp' }, { name: 'Headquarters' }),
    );
    const key = await insertFleetKey(admin, org.id);
    const token = await signUserToken({
      sub: randomUUID(),
      email: 'tech@bench.example',
      name: 'Bench Tech',
      role: 'org_technician',
      scope: 'organization',
      partnerId: partner.id,
      orgId: org.id,
    });

    http = await startHttpGateway({ port: 0, host: '127.0.0.1', routes });
    ws = await startWsGateway({ port: 0, host: '127.0.0.1', routes: wsRoutes });
    useLocalManagementApi(ws);
    const base = http.url;
    const stores: EventStore[] = [];
    const devices: Enrolled[] = [];
    status(`enrolling and connecting ${agentCount} simulated agents ...`);
    for (let i = 0; i < agentCount; i++) {
      const hostname = `WS-${String(i).padStart(4, '0')}`;
      const reply = await fetch(`${base}/api/v1/agents/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enrollmentKey: key, hostname }),
      });
      const enrolled = (await reply.json()) as Enrolled;
      if (reply.status !== 201) throw new Error(`enroll: ${reply.status} ${JSON.stringify(enrolled)}`);
      const store = generateEventStore({ computer: hostname });
      const agent = startAgent({
        server: base,
        wsUrl: ws.url,
        agentId: enrolled.agentId,
        token: enrolled.token,
        store,
        submitEvents: false,
        heartbeatSeconds: 3600,
      });
      await agent.connected();
      agents.push(agent);
      stores.push(store);
      devices.push(enrolled);
    }
    statusDone();

    const get = async (path: string) => {
      const reply = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
      const body = await reply.text();
      if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${body.slice(0, 300)}`);
      return body;
    };
    const device = devices[0]!.deviceId;
    const live = `/api/v1/devices/${device}/eventlogs`;
    const inMemory = (query: Parameters<typeof answer>[1]) => () =>
      Promise.resolve(answerFrames(answer(stores[0]!, query)));

    const cases = [
      {
        name: 'list of logs (1 message)',
        path: `/api/v1/system-tools/devices/${device}/eventlogs`,
        memory: inMemory({ type: 'eventlogs.list', requestId: randomUUID() }),
        target: targets.smallP95Ms,
      },
      {
        name: '50 System events (~55 KB, 1 message)',
        path: `${live}/System/events?limit=50`,
        memory: inMemory({ type: 'eventlogs.events', requestId: randomUUID(), name: 'System', page: 1, limit: 50 }),
        target: targets.smallP95Ms,
      },
      {
        name: '500 Security events (~850 KB, 9 chunks)',
        path: `${live}/Security/events?limit=500`,
        memory: inMemory({ type: 'eventlogs.events', requestId: randomUUID(), name: 'Security', page: 1, limit: 500 }),
        target: targets.chunkedP95Ms,
      },
    ];
    const lines: string[][] = [];
    status('baselines: GET /health and the stored event list ...');
    const health = await latency(() => get('/api/v1/health'), queries, 5);
    const stored = await latency(() => get(`/api/v1/devices/${device}/eventlogs?limit=50`), queries, 5);
    lines.push([
      '  bare HTTP round trip: GET /health',
      `p50 ${ms(health.p50)}, p95 ${ms(health.p95)}`,
      '',
      '(baseline)',
      '',
    ]);
    lines.push([
      '  database-backed route: stored event list, 50 rows',
      `p50 ${ms(stored.p50)}, p95 ${ms(stored.p95)}`,
      '',
      '(baseline)',
      '',
    ]);
    for (const c of cases) {
      status(`live query: ${c.name}, ${queries} sequential ...`);
      const measured = await latency(() => get(c.path), queries, 5);
      const memory = await latency(c.memory, queries, 5);
      lines.push([
        `  ${c.name}`,
        `p50 ${ms(measured.p50)}, p95 ${ms(measured.p95)}`,
        `agent in memory p95 ${ms(memory.p95)}; relay overhead p95 ${ms(measured.p95 - health.p95 - memory.p95)}`,
        `p95 < ${c.target} ms`,
        verdict(measured.p95 < c.target),
      ]);
    }

    // 50 concurrent queries over 10 agents (mixed sizes), several rounds: none may fail.
    let failures = 0;
    const times: number[] = [];
    const walls: number[] = [];
    for (let round = 0; round < rounds; round++) {
      status(`${concurrent} concurrent queries to ${agentCount} agents: round ${round + 1} of ${rounds} ...`);
      const roundStarted = performance.now();
      await Promise.all(
        Array.from({ length: concurrent }, async (_, i) => {
          const target = devices[i % devices.length]!.deviceId;
          const path =
            i % 5 === 4
              ? `/api/v1/devices/${target}/eventlogs/Security/events?limit=500`
              : `/api/v1/devices/${target}/eventlogs/System/events?limit=50&page=${1 + (i % 7)}`;
          const queryStarted = performance.now();
          try {
            await get(path);
          } catch (error) {
            failures += 1;
            console.error(String(error));
          }
          times.push(performance.now() - queryStarted);
        }),
      );
      walls.push(performance.now() - roundStarted);
    }
    statusDone();
    const burst = percentiles(times);
    lines.push([''], [`${concurrent} concurrent queries to ${agentCount} agents (1 in 5 chunked), ${rounds} rounds`]);
    lines.push([
      `  ${rounds * concurrent} queries, ${failures} failed`,
      `p50 ${ms(burst.p50)}, p95 ${ms(burst.p95)}`,
      `a round (all ${concurrent}) takes ${ms(percentiles(walls).p50)} (median)`,
      'no failure',
      verdict(failures === 0),
    ]);

    console.log(`
Logbook live-query benchmark (${new Date().toISOString().slice(0, 16)}Z): PostgreSQL ${rows[0]!.version} on ${scratch.server};
${availableParallelism()} CPUs shared by the database, both gateways, ${agentCount} simulated agents and this client (load ${loadavg()[0]!.toFixed(1)}).
Sequential figures: ${queries} queries each after 5 untimed ones. A live query polls the database for the answer
(first after ${polling.firstMs} ms, each pause ${polling.growth}x the last, at most ${polling.maxMs} ms), which sets its floor.

${formatTable(['', 'figure', 'baseline (same run)', 'target', ''], [['Live queries, one agent, sequential'], ...lines])}

Done in ${((performance.now() - started) / 1000).toFixed(0)} s.`);
  } finally {
    await Promise.all(agents.map((agent) => agent.stop()));
    await ws?.close();
    await http?.close();
    await closeAppDb();
    await admin.close();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error('bench:live failed:', error);
  process.exit(1);
});
