/**
 * `npm run bench:scripts [-- --devices 1000 --alerts 1000000 --lists 200]`: the script and alert figures,
 * each beside a baseline measured in the same run:
 *
 * - a script run on --devices devices with as many connected simulated agents through the local stack (HTTP gateway,
 *   the run's items, script.run over the management API and the WebSocket gateway, the agents' started and finished
 *   answers through $default, the script.execute rows): time until every item is completed, p50/p95 per item (its
 *   finish after the run was created), lost items; baseline: the same number of live-query round trips (the list of
 *   event logs of each device), 50 at a time as the run's dispatch sends;
 * - GET /alerts with --alerts alerts in one organization: p50/p95 of the first page, a status filter, a device
 *   filter and a deep page; baseline: GET /health on the same gateway.
 *
 * Everything runs in this process, on a scratch database that is dropped afterwards.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type RunningAgent, startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
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
import { insertFleetKey } from './support/fleet-key.ts';
import { ms, positive, status, statusDone, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { percentiles, pool } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '1000' },
    alerts: { type: 'string', default: '1000000' },
    lists: { type: 'string', default: '200' },
  },
  strict: false,
});
const deviceCount = positive('devices', args.devices);
const alertCount = positive('alerts', args.alerts);
const lists = positive('lists', args.lists);

const targets = { alertListP95Ms: 50 };
const seconds = (n: number) => `${(n / 1000).toFixed(1)} s`;

async function main() {
  const started = performance.now();
  const scratch = await createScratchDatabase('scripts');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  let http: Awaited<ReturnType<typeof startHttpGateway>> | undefined;
  let ws: Awaited<ReturnType<typeof startWsGateway>> | undefined;
  const agents: RunningAgent[] = [];
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    process.env.APP_DATABASE_URL = roleUrls(scratch.url).app;
    process.env.JWT_SECRET ??= randomBytes(32).toString('base64url');
    process.env.LOG_LEVEL ??= 'WARN';
    const { rows: version } = await admin.query<{ version: string }>(
      `SELECT current_setting('server_version') AS version`,
    );
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
    const call = async (method: string, path: string, body?: unknown) => {
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await reply.text();
      if (reply.status >= 300) throw new Error(`${method} ${path}: ${reply.status} ${text.slice(0, 300)}`);
      // biome-ignore lint/suspicious/noExplicitAny: the replies of several routes, each read by a field or two
      return text ? (JSON.parse(text) as Record<string, any>) : {};
    };

    // One generated event store serves every agent: the run does not read it, the live-query baseline lists its logs.
    const store = generateEventStore({ computer: 'WS-BENCH' });
    const devices: string[] = [];
    await pool(
      Array.from({ length: deviceCount }, (_, i) => i),
      20,
      async (i) => {
        const reply = await fetch(`${base}/api/v1/agents/enroll`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ enrollmentKey: key, hostname: `WS-${String(i).padStart(4, '0')}` }),
        });
        const enrolled = (await reply.json()) as { agentId: string; deviceId: string; token: string };
        const agent = startAgent({
          server: base,
          wsUrl: ws!.url,
          agentId: enrolled.agentId,
          token: enrolled.token,
          store,
          submitEvents: false,
          heartbeatSeconds: 3600,
        });
        await agent.connected();
        agents.push(agent);
        devices[i] = enrolled.deviceId;
        if (i % 50 === 0) status(`enrolled and connected ${agents.length} of ${deviceCount} simulated agents ...`);
      },
    );
    statusDone();

    // Baseline: as many live-query round trips, 50 at a time.
    status(`${deviceCount} live-query round trips ...`);
    const liveTimes: number[] = [];
    const liveStarted = performance.now();
    await pool(devices, 50, async (deviceId) => {
      const at = performance.now();
      await call('GET', `/api/v1/devices/${deviceId}/eventlogs`);
      liveTimes.push(performance.now() - at);
    });
    const liveWall = performance.now() - liveStarted;

    status(`a script run on ${deviceCount} devices ...`);
    const script = await call('POST', '/api/v1/scripts', {
      orgId: org.id,
      name: 'Bench check',
      language: 'powershell',
      osTypes: ['windows'],
      content: 'Get-Service | Where-Object Status -eq Stopped',
      parameters: [{ name: 'exitCode', type: 'number', default: 0 }],
    });
    const runStarted = performance.now();
    const run = await call('POST', `/api/v1/scripts/${script.id}/runs`, { deviceIds: devices });
    let view = run;
    const deadline = Date.now() + 300_000;
    while (!view.done && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      view = await call('GET', `/api/v1/script-runs/${run.id}`);
    }
    const runWall = performance.now() - runStarted;
    statusDone();
    const { rows: itemTimes } = await admin.query<{ ms: number; status: string }>(
      `SELECT i.status, extract(epoch FROM (i.finished_at - r.created_at)) * 1000 AS ms
         FROM script_run_items i JOIN script_runs r ON r.id = i.run_id WHERE r.id = :runId::uuid`,
      { runId: run.id },
    );
    const completed = itemTimes.filter((row) => row.status === 'completed');
    const perItem = percentiles(completed.map((row) => Number(row.ms)));
    const live = percentiles(liveTimes);
    const executeRows = Number(
      (await admin.query(`SELECT count(*) AS n FROM audit_logs WHERE action = 'script.execute'`)).rows[0]!.n,
    );

    // The agents have done their part: stopped, they take no CPU from the alert lists.
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));

    // Alerts: --alerts rows in the organization, most resolved, spread over the devices and three months.
    status(`inserting ${alertCount.toLocaleString('en')} alerts ...`);
    const insertStarted = performance.now();
    for (let from = 0; from < alertCount; from += 200_000) {
      await admin.query(
        `INSERT INTO alerts (org_id, partner_id, device_id, source_type, source_id, source_key, severity, title, details,
                             status, last_source_id, created_at, last_occurred_at)
         SELECT :orgId::uuid, :partnerId::uuid, (:devices::jsonb ->> (n % jsonb_array_length(:devices::jsonb)))::uuid,
                'script', gen_random_uuid(), 'script:' || n, (ARRAY['low','medium','high','critical'])[1 + n % 4],
                'Bench check exited with code ' || (1 + n % 5), jsonb_build_object('exitCode', 1 + n % 5),
                CASE WHEN n % 50 = 0 THEN 'open' WHEN n % 50 < 5 THEN 'acknowledged' ELSE 'resolved' END,
                gen_random_uuid(), now() - (n % 7776000) * interval '1 second', now()
           FROM generate_series(:from::int, :to::int) AS n`,
        {
          orgId: org.id,
          partnerId: partner.id,
          devices,
          from,
          to: Math.min(alertCount, from + 200_000) - 1,
        },
      );
      status(`inserted ${Math.min(alertCount, from + 200_000).toLocaleString('en')} alerts ...`);
    }
    await admin.query('ANALYZE alerts');
    const insertWall = performance.now() - insertStarted;
    statusDone();
    const timed = async (path: string) => {
      for (let i = 0; i < 5; i++) await call('GET', path);
      const times: number[] = [];
      for (let i = 0; i < lists; i++) {
        const at = performance.now();
        await call('GET', path);
        times.push(performance.now() - at);
      }
      return percentiles(times);
    };
    status('alert lists ...');
    const health = await timed('/api/v1/health');
    const alertCases = [
      ['first page, 50 newest', '/api/v1/alerts?limit=50'],
      ['status=open', '/api/v1/alerts?status=open&limit=50'],
      ['one device', `/api/v1/alerts?deviceId=${devices[7]}&limit=50`],
      ['severity=critical, page 20', '/api/v1/alerts?severity=critical&limit=50&page=20'],
    ] as const;
    const alertLines: string[][] = [];
    for (const [name, path] of alertCases) {
      const measured = await timed(path);
      alertLines.push([
        `  ${name}`,
        `p50 ${ms(measured.p50)}, p95 ${ms(measured.p95)}`,
        `GET /health p95 ${ms(health.p95)}`,
        `p95 < ${targets.alertListP95Ms} ms`,
        verdict(measured.p95 < targets.alertListP95Ms),
      ]);
    }
    statusDone();

    const lost = deviceCount - completed.length;
    console.log(`
Logbook scripts and alerts benchmark (${new Date().toISOString().slice(0, 16)}Z): PostgreSQL ${version[0]!.version} on ${scratch.server};
${availableParallelism()} CPUs shared by the database, both gateways, ${deviceCount} simulated agents and this client (load ${loadavg()[0]!.toFixed(1)}).

${formatTable(
  ['', 'figure', 'baseline (same run)', 'target', ''],
  [
    [`A script run on ${deviceCount} devices, ${deviceCount} agents connected`],
    [
      '  every item completed after',
      seconds(runWall),
      `${deviceCount} live-query round trips, 50 at a time: ${seconds(liveWall)}`,
      '',
      '',
    ],
    [
      '  per item (finished - run created)',
      `p50 ${ms(perItem.p50)}, p95 ${ms(perItem.p95)}`,
      `per live query p50 ${ms(live.p50)}, p95 ${ms(live.p95)}`,
      '',
      '',
    ],
    [`  items lost (not completed)`, String(lost), '', '0', verdict(lost === 0)],
    [
      '  script.execute rows written',
      String(executeRows),
      '',
      String(deviceCount),
      verdict(executeRows === deviceCount),
    ],
    [''],
    [
      `GET /alerts with ${alertCount.toLocaleString('en')} alerts in one organization (inserted in ${seconds(insertWall)})`,
    ],
    ...alertLines,
  ],
)}

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
  console.error('bench:scripts failed:', error);
  process.exit(1);
});
