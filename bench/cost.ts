/**
 * `npm run bench:cost [-- --calls 60 --items 20 --heartbeat-batch 50]`: what one call of each agent operation costs on the local stack, the
 * figures the cost model reads (tools/cost/operations.json, written by this run; docs/operations.md "Cost model").
 * The API runs behind the local gateways and reaches PostgreSQL through the local RDS Data API, as in Lambda, so for
 * each operation it counts statements at the API's Db seam, Data API requests, WAL bytes (pg_current_wal_lsn), the
 * growth of tables and indexes, PostgreSQL's CPU time (/proc, so the embedded server of the run) and the handler's
 * time, and the bytes of its log lines: what the handlers write (Powertools at the agent functions' level, metrics in
 * the embedded format) in the agent functions' environment (support/lambda-environment.ts), and the stage's access-log
 * lines the local gateways render from the stack's own formats.
 *
 * Each figure is printed beside its baseline measured in the same run: an HTTP operation beside the readiness check
 * (GET /api/v1/health/ready, one statement), a WebSocket operation beside the keep-alive message.
 */
// First: the agent functions' environment, before any module reads it (what their handlers write to the log).
import './support/lambda-environment.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { batchedJobKinds, runJob, runJobBatch } from '#functions/queue/jobs.ts';
import { routes, wsRoutes } from '#functions/routes.ts';
import { useLocalDataApi } from '#infra/local/data-api-server.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { startHttpGateway } from '#infra/local/http-gateway.ts';
import { startWsGateway, useLocalManagementApi } from '#infra/local/ws-gateway.ts';
import { appStatementCount, closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import type { WebSocketHandler } from '#shared/http/ws-handler.ts';
import { publishMetrics } from '#shared/observability/metrics.ts';
import { runJobsLocally } from '#shared/queue/work-queue.ts';
import type { MeasuredOperations, OperationFigures, StoredClass, Transport } from '#tools/cost/model.ts';
import { insertFleetKey } from './support/fleet-key.ts';
import { loadAverage, positive, status } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { percentiles } from './support/timing.ts';

// `npm run bench` passes its arguments to every benchmark: options of the others are ignored here.
const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '60' },
    items: { type: 'string', default: '20' },
    'heartbeat-batch': { type: 'string', default: '50' },
    out: { type: 'string', default: 'tools/cost/operations.json' },
  },
  strict: false,
});
const calls = positive('calls', args.calls);
const items = positive('items', args.items);
const batch = positive('heartbeat-batch', args['heartbeat-batch']);

/** What a call of an operation sent and got. */
interface CallResult {
  ms: number;
  requestBytes: number;
  responseBytes: number;
  /** WebSocket messages billed for the call (0 over HTTP). */
  messages: number;
}

/** Headers of a request and of its answer, beside the bodies, in the bytes an HTTP API call moves. */
const headerBytes = 300;

/** The table's retention class: what keeps its rows, and so how long they add to Aurora's storage. */
function storedClass(table: string): StoredClass {
  if (table.startsWith('audit')) return 'audit';
  if (table.startsWith('agent_log')) return 'agentLogs';
  if (table.startsWith('device_event_log')) return 'eventLogs';
  if (table.startsWith('device_metric_samples') || table.startsWith('monitor_check_results')) return 'metrics';
  return 'churn';
}

const lsnBytes = (lsn: string) => {
  const [high = '0', low = '0'] = lsn.split('/');
  return BigInt(`0x${high}`) * 2n ** 32n + BigInt(`0x${low}`);
};

/** The fields of /proc/<pid>/stat after the command's name (state, ppid, …), or none when the process is gone. */
function procStat(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU time (user and system) of a PostgreSQL server's processes, in ms: Linux counts it in ticks of 10 ms. */
function serverCpuMs(postmaster: number): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = procStat(entry);
    if (fields && (Number(entry) === postmaster || Number(fields[1]) === postmaster))
      ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
}

/**
 * Bytes and lines written to the process's stdout and stderr: a function's log, as Lambda's runtime sends it on.
 * While `quiet`, what goes to stdout (the handlers' metric and info lines) is counted and not shown; stderr (warnings
 * and errors) is always shown.
 */
const functionLog = { bytes: 0, lines: 0, quiet: false };
/** What the heartbeat queue's worker runs wrote of it, and how many runs there were. */
const workerLog = { bytes: 0, lines: 0, runs: 0 };
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    functionLog.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    functionLog.lines += String(chunk).split('\n').length - 1;
    if (functionLog.quiet && stream === process.stdout) return true;
    return write(chunk, ...rest);
  }) as typeof stream.write;
}
/** The access-log lines of both stages, as their log groups would take them, by route. */
const accessLogByRoute = new Map<string, { bytes: number; lines: number }>();
const logAccess = (line: string) => {
  const route = String((JSON.parse(line) as { routeKey?: unknown }).routeKey);
  const counted = accessLogByRoute.get(route) ?? { bytes: 0, lines: 0 };
  accessLogByRoute.set(route, { bytes: counted.bytes + Buffer.byteLength(line), lines: counted.lines + 1 });
};
/** The access-log lines of some routes (all of them without a list) so far. */
const accessLogged = (routes?: string[]) =>
  [...accessLogByRoute]
    .filter(([route]) => !routes || routes.includes(route))
    .reduce((sum, [, counted]) => ({ bytes: sum.bytes + counted.bytes, lines: sum.lines + counted.lines }), {
      bytes: 0,
      lines: 0,
    });

/**
 * A baseline monitoring policy, assigned to the whole partner (as bench/monitoring.ts loads one): three metric items
 * and two service checks.
 */
async function watchMetrics(admin: Db, partnerId: string): Promise<void> {
  const metric = (key: string, name: string, op: 'gt' | 'lt', threshold: number, clear: number, volume?: string) => ({
    key,
    type: 'metric',
    severity: 'medium',
    autoResolve: true,
    metric: name,
    ...(volume ? { volume } : {}),
    op,
    threshold,
    clearThreshold: clear,
    windowSeconds: 300,
    aggregation: 'avg',
    pendingSeconds: 120,
  });
  const service = (key: string, name: string) => ({ key, type: 'service', severity: 'high', name, expect: 'running' });
  const items = [
    metric('cpu', 'cpu.percent', 'gt', 95, 85),
    metric('memory', 'memory.percent', 'gt', 95, 85),
    metric('disk', 'disk.freePercent', 'lt', 5, 10, 'C:'),
    service('antivirus', 'WinDefend'),
    service('backup', 'BackupAgent'),
  ];
  await admin.query(
    `WITH p AS (
       INSERT INTO policies (partner_id, kind, name, items)
       VALUES (:partnerId::uuid, 'monitoring', 'Baseline', :items::jsonb) RETURNING id, name, items),
     v AS (INSERT INTO policy_versions (policy_id, version, name, items) SELECT id, 1, name, items FROM p)
     INSERT INTO policy_assignments (policy_id, partner_id, org_id, kind, level, target_id)
     SELECT id, :partnerId::uuid, NULL, 'monitoring', 'partner', :partnerId::uuid FROM p`,
    { partnerId, items },
  );
}

async function main() {
  const scratch = await createScratchDatabase('cost');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  let http: Awaited<ReturnType<typeof startHttpGateway>> | undefined;
  let ws: Awaited<ReturnType<typeof startWsGateway>> | undefined;
  let dataApi: Awaited<ReturnType<typeof useLocalDataApi>> | undefined;
  try {
    await grantRoleLogins(admin, localRolePasswords);
    const urls = roleUrls(scratch.url);
    process.env.APP_DATABASE_URL = urls.app;
    process.env.AUDIT_ADMIN_DATABASE_URL = urls.auditAdmin;
    process.env.JWT_SECRET ??= randomBytes(32).toString('base64url');
    // The API's connection goes through the local Data API, as a Lambda's does.
    const api = await useLocalDataApi();
    dataApi = api;

    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = await admin.transaction((tx) =>
      insertOrganizationWithSite(tx, { partnerId: partner.id, name: 'Bench Corp' }, { name: 'Headquarters' }),
    );
    const key = await insertFleetKey(admin, org.id);

    // The WebSocket handlers timed as they run, as Lambda bills them.
    const runs = new EventEmitter();
    const loadHandler = async (handlerPath: string): Promise<WebSocketHandler> => {
      const module = (await import(new URL(`../functions/${handlerPath}.ts`, import.meta.url).href)) as {
        handler: WebSocketHandler;
      };
      return async (event, context) => {
        const started = performance.now();
        try {
          return await module.handler(event, context);
        } finally {
          runs.emit(handlerPath, performance.now() - started);
        }
      };
    };
    const handlerRun = (handlerPath: string) =>
      new Promise<number>((resolve) => runs.once(handlerPath, (ms: number) => resolve(ms)));

    http = await startHttpGateway({ port: 0, host: '127.0.0.1', routes, accessLog: logAccess });
    ws = await startWsGateway({ port: 0, host: '127.0.0.1', routes: wsRoutes, loadHandler, accessLog: logAccess });
    useLocalManagementApi(ws);
    // The batches of the heartbeat queue, timed as the worker runs them.
    runJobsLocally(runJob, {
      kinds: batchedJobKinds,
      run: async (jobs) => {
        const started = performance.now();
        const logged = { ...functionLog };
        try {
          await runJobBatch(jobs);
        } finally {
          // What the worker's invocation publishes when it ends (shared/observability/handler.ts).
          publishMetrics();
          workerLog.bytes += functionLog.bytes - logged.bytes;
          workerLog.lines += functionLog.lines - logged.lines;
          workerLog.runs++;
          runs.emit('batch', performance.now() - started, jobs.length);
        }
      },
    });
    const base = http.url;
    functionLog.quiet = true;
    const wsUrl = ws.url;

    const enroll = async (hostname: string) => {
      const reply = await fetch(`${base}/api/v1/agents/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enrollmentKey: key, hostname }),
      });
      if (reply.status !== 201) throw new Error(`enroll: ${reply.status} ${await reply.text()}`);
      return (await reply.json()) as { agentId: string; token: string };
    };
    const agent = await enroll('COST-0001');
    const connector = await enroll('COST-0002');
    // The agents whose heartbeats make a batch (one after the other: enrollment is no part of the figures).
    const beaters: { agentId: string; token: string }[] = [];
    for (let i = 0; i < batch; i++) beaters.push(await enroll(`COST-B${String(i).padStart(3, '0')}`));

    const call = async (
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ): Promise<CallResult> => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const started = performance.now();
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json', ...headers },
        body: text,
      });
      const answer = await reply.text();
      const ms = performance.now() - started;
      if (!reply.ok) throw new Error(`${method} ${path}: ${reply.status} ${answer}`);
      return {
        ms,
        requestBytes: headerBytes + Buffer.byteLength(text ?? ''),
        responseBytes: headerBytes + Buffer.byteLength(answer),
        messages: 0,
      };
    };
    const agentPath = `/api/v1/agents/${agent.agentId}`;

    // PostgreSQL's CPU time: the server's processes (the postmaster and its children) as /proc counts them.
    const { rows: backend } = await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const postmaster = Number(procStat(backend[0]!.pid)?.[1]);
    async function counts() {
      const { rows: wal } = await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      const { rows: tables } = await admin.query<{ name: string; bytes: string }>(
        `SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')`,
      );
      const stored: Record<StoredClass, number> = { audit: 0, agentLogs: 0, eventLogs: 0, metrics: 0, churn: 0 };
      for (const table of tables) stored[storedClass(table.name)] += Number(table.bytes);
      if (api.calls.length >= 10_000) throw new Error('the local Data API keeps 10,000 calls: give fewer --calls');
      return {
        wal: lsnBytes(wal[0]!.lsn),
        stored,
        statements: appStatementCount(),
        dataApiCalls: api.calls.length,
        log: { ...functionLog },
        worker: { ...workerLog },
        access: accessLogged(),
      };
    }
    // The CPU time is read after the counting queries before the calls, and before them after.
    const snapshot = {
      before: async () => ({ ...(await counts()), dbMs: serverCpuMs(postmaster) }),
      after: async () => {
        const dbMs = serverCpuMs(postmaster);
        return { ...(await counts()), dbMs };
      },
    };

    const figures: Record<string, OperationFigures> = {};
    async function measure(
      key: string,
      description: string,
      transport: Transport,
      itemsPerCall: number,
      run: (i: number) => Promise<CallResult>,
      /** Calls one run makes (a batch of heartbeats): the figures are per call. */
      callsPerRun = 1,
    ): Promise<void> {
      status(`${description} ...`);
      // Warm: the handler's module is loaded and its first statements planned before anything is counted.
      for (let i = 0; i < 2; i++) await run(-1 - i);
      const before = await snapshot.before();
      const results: CallResult[] = [];
      for (let i = 0; i < calls; i++) results.push(await run(i));
      const after = await snapshot.after();
      const per = (n: number) => n / (calls * callsPerRun);
      const mean = (pick: (r: CallResult) => number) => per(results.reduce((sum, r) => sum + pick(r), 0));
      figures[key] = {
        description,
        transport,
        statements: per(after.statements - before.statements),
        dataApiCalls: per(after.dataApiCalls - before.dataApiCalls),
        walBytes: Math.round(per(Number(after.wal - before.wal))),
        storedBytes: Object.fromEntries(
          (Object.keys(after.stored) as StoredClass[]).map((c) => [
            c,
            Math.max(0, Math.round(per(after.stored[c] - before.stored[c]))),
          ]),
        ) as Record<StoredClass, number>,
        durationMs: Number((percentiles(results.map((r) => r.ms)).p50 / callsPerRun).toFixed(2)),
        dbMs: Number(per(after.dbMs - before.dbMs).toFixed(2)),
        requestBytes: Math.round(mean((r) => r.requestBytes)),
        responseBytes: Math.round(mean((r) => r.responseBytes)),
        itemsPerCall,
        messagesPerCall: mean((r) => r.messages),
        // The calls' own lines; a worker run's (a batch) apart, per run.
        functionLogBytes: Math.round(
          per(after.log.bytes - before.log.bytes - (after.worker.bytes - before.worker.bytes)),
        ),
        functionLogLines: per(after.log.lines - before.log.lines - (after.worker.lines - before.worker.lines)),
        ...(callsPerRun > 1 && after.worker.runs > before.worker.runs
          ? {
              batchLogBytes: Math.round(
                (after.worker.bytes - before.worker.bytes) / (after.worker.runs - before.worker.runs),
              ),
              batchLogLines: (after.worker.lines - before.worker.lines) / (after.worker.runs - before.worker.runs),
            }
          : {}),
        accessLogBytes: Math.round(per(after.access.bytes - before.access.bytes)),
        accessLogLines: per(after.access.lines - before.access.lines),
        ...(callsPerRun > 1 ? { batch: callsPerRun } : {}),
      };
    }

    // HTTP operations, as the simulated agent (demo/agent) sends them.
    await measure('health.ready', 'readiness check GET /health/ready (baseline)', 'http', 1, () =>
      call('GET', '/api/v1/health/ready'),
    );
    await measure('heartbeat.http', 'heartbeat POST /agents/{id}/heartbeat', 'http', 1, () =>
      call('POST', `${agentPath}/heartbeat`, { agentVersion: '2.4.1-sim', status: 'online', serialNumber: 'SIM-0001' }),
    );
    await measure(
      'logs.upload',
      `diagnostic log upload POST /agents/{id}/logs (${items} entries)`,
      'http',
      items,
      (i) =>
        call(
          'POST',
          `${agentPath}/logs`,
          {
            logs: Array.from({ length: items }, (_, j) => ({
              timestamp: new Date().toISOString(),
              level: j % 10 === 0 ? 'warn' : 'info',
              component: 'service',
              message: `Checked in with the server (${i}.${j}); next check-in in 60 s`,
              fields: { attempt: j, ms: 41 },
              agentVersion: '2.4.1-sim',
            })),
          },
          { 'idempotency-key': randomUUID() },
        ),
    );
    await measure(
      'eventlogs.submit',
      `event-log submission PUT /agents/{id}/eventlogs (${items} events)`,
      'http',
      items,
      (i) =>
        call('PUT', `${agentPath}/eventlogs`, {
          events: Array.from({ length: items }, (_, j) => {
            const recordId = (i + 10) * items + j;
            return {
              timestamp: new Date(Date.now() - j * 60_000).toISOString(),
              level: j % 4 === 0 ? 'error' : 'warning',
              category: 'system',
              source: 'Service Control Manager',
              eventId: `System:${recordId}`,
              message: `The Windows Update service terminated unexpectedly. It has done this ${j + 1} time(s).`,
              details: { logName: 'System', recordId, windowsEventId: 7031, computer: 'COST-0001', user: null },
            };
          }),
        }),
    );
    await measure('posture.upload', 'management-posture upload PUT /agents/{id}/management-posture', 'http', 1, () =>
      call('PUT', `${agentPath}/management-posture`, {
        collectedAt: new Date().toISOString(),
        categories: {
          rmm: [{ name: 'Datto RMM', status: 'active' }],
          'remote-access': [{ name: 'TeamViewer', status: 'installed' }],
          'endpoint-security': [{ name: 'Microsoft Defender', status: 'active' }],
        },
      }),
    );
    // Two rounds of uploads, each its own span of minutes (`round` 0 and 1), so the second stores new samples too.
    const samplesAt = Date.now() - (2 * calls + 10) * 5 * 60_000;
    const metricsUpload = (round: number) => (i: number) =>
      call('PUT', `${agentPath}/metrics`, {
        samples: Array.from({ length: items }, (_, j) => {
          const metrics = ['cpu.percent', 'memory.percent', 'disk.freePercent', 'disk.freeBytes'] as const;
          const metric = metrics[j % metrics.length]!;
          const minute = (round * (calls + 5) + i + 2) * 5 + Math.floor(j / metrics.length);
          const timestamp = new Date(samplesAt + minute * 60_000).toISOString();
          const value = metric === 'disk.freeBytes' ? 160 * 1024 ** 3 : 10 + (j % 7);
          return metric.startsWith('disk') ? { metric, volume: 'C:', value, timestamp } : { metric, value, timestamp };
        }),
      });
    await measure(
      'metrics.upload',
      `monitoring metrics upload PUT /agents/{id}/metrics (${items} samples, no item watching)`,
      'http',
      items,
      metricsUpload(0),
    );
    // The same upload once a monitoring policy watches its metrics, as an MSP's baseline policy does: CPU, memory
    // and the system volume's free space over 5-minute windows, thresholds the samples stay clear of.
    await watchMetrics(admin, partner.id);
    await measure(
      'metrics.upload.watched',
      `monitoring metrics upload PUT /agents/{id}/metrics (${items} samples, 3 metric items watching)`,
      'http',
      items,
      metricsUpload(1),
    );
    const checksAt = Date.now() - (calls + 5) * 60_000;
    await measure('checks.upload', 'check results POST /agents/{id}/check-results (2 service checks)', 'http', 1, (i) =>
      call('POST', `${agentPath}/check-results`, {
        results: ['antivirus', 'backup'].map((itemKey) => ({
          itemKey,
          status: 'pass',
          timestamp: new Date(checksAt + (i + 3) * 60_000).toISOString(),
        })),
      }),
    );

    // WebSocket operations: the keep-alive message on an open connection, a connection opened and closed.
    const socket = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${agent.token}` } });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    /** A message on the agent's connection, timed as its handler runs; with `reply`, the answer is awaited and billed too. */
    const message = async (body: object, reply = false): Promise<CallResult> => {
      const text = JSON.stringify(body);
      const ran = handlerRun('ws/default');
      const answered = reply
        ? new Promise<string>((resolve) => socket.once('message', (data) => resolve(data.toString())))
        : Promise.resolve('');
      socket.send(text);
      const ms = await ran;
      const answer = await answered;
      return {
        ms,
        requestBytes: Buffer.byteLength(text),
        responseBytes: Buffer.byteLength(answer),
        messages: reply ? 2 : 1,
      };
    };
    // The keep-alive goes to the route API Gateway answers itself (no Lambda): a message without a type follows it as
    // a barrier ($default, no database), and the handler runs beyond the barrier's are the keep-alive's invocations.
    let defaultRuns = 0;
    runs.on('ws/default', () => {
      defaultRuns++;
    });
    const pingRuns = { before: 0, after: 0 };
    const pings = { before: accessLogged(['ping']), after: accessLogged(['ping']) };
    await measure('ws.ping', 'keep-alive message on the agent WebSocket (baseline)', 'ws-message', 1, async (i) => {
      if (i === 0) {
        pingRuns.before = defaultRuns;
        pings.before = accessLogged(['ping']);
      }
      const ping = JSON.stringify({ type: 'ping' });
      socket.send(ping);
      await message({});
      if (i === calls - 1) {
        pingRuns.after = defaultRuns;
        pings.after = accessLogged(['ping']);
      }
      return { ms: 0, requestBytes: Buffer.byteLength(ping), responseBytes: 0, messages: 1 };
    });
    // The barriers' invocations, log lines and access-log lines are theirs: the keep-alive invokes nothing, so it
    // writes no function log, and its access-log lines are those of the `ping` route.
    Object.assign(figures['ws.ping']!, {
      invocationsPerCall: (pingRuns.after - pingRuns.before - calls) / calls,
      functionLogBytes: 0,
      functionLogLines: 0,
      accessLogBytes: Math.round((pings.after.bytes - pings.before.bytes) / calls),
      accessLogLines: (pings.after.lines - pings.before.lines) / calls,
    });
    // Heartbeats on the connections of `batch` agents at once: each message is queued by $default, and one run of
    // the heartbeat queue's batch records them all and sends the acks. Per heartbeat: the message, its ack, and its
    // share of the batch.
    const beatSockets = await Promise.all(
      beaters.map(async (each) => {
        const other = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${each.token}` } });
        await new Promise((resolve, reject) => other.once('open', resolve).once('error', reject));
        return other;
      }),
    );
    const heartbeatBody = { type: 'heartbeat', agentVersion: '2.4.1-sim', status: 'online', serialNumber: 'SIM-0001' };
    await measure(
      'heartbeat.websocket',
      `heartbeat message on the agent WebSocket, recorded in a batch of ${batch}`,
      'ws-message',
      1,
      async () => {
        const text = JSON.stringify(heartbeatBody);
        let handlerMs = 0;
        const onDefault = (ms: number) => {
          handlerMs += ms;
        };
        runs.on('ws/default', onDefault);
        let batchMs = 0;
        const onBatch = (ms: number) => {
          batchMs += ms;
        };
        runs.on('batch', onBatch);
        const acks = beatSockets.map(
          (each) => new Promise<string>((resolve) => each.once('message', (data) => resolve(data.toString()))),
        );
        for (const each of beatSockets) each.send(text);
        const answers = await Promise.all(acks);
        runs.off('ws/default', onDefault);
        runs.off('batch', onBatch);
        for (const answer of answers) if (!answer.includes('heartbeat.ack')) throw new Error(`heartbeat: ${answer}`);
        return {
          ms: handlerMs + batchMs,
          requestBytes: Buffer.byteLength(text) * batch,
          responseBytes: answers.reduce((sum, answer) => sum + Buffer.byteLength(answer), 0),
          messages: 2 * batch,
        };
      },
      batch,
    );
    // Their $disconnect runs (and access-log lines) are done before the connections are measured.
    let beatersGone = 0;
    const allGone = new Promise<void>((resolve) => {
      const onDisconnect = () => {
        if (++beatersGone < beatSockets.length) return;
        runs.off('ws/disconnect', onDisconnect);
        resolve();
      };
      runs.on('ws/disconnect', onDisconnect);
    });
    for (const each of beatSockets) each.close(1000);
    await allGone;
    await measure('ws.connect', 'WebSocket $connect and $disconnect', 'ws-connection', 1, async () => {
      const connected = handlerRun('ws/connect');
      const other = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${connector.token}` } });
      await new Promise((resolve, reject) => other.once('open', resolve).once('error', reject));
      const connectMs = await connected;
      const disconnected = handlerRun('ws/disconnect');
      other.close(1000);
      const disconnectMs = await disconnected;
      return { ms: connectMs + disconnectMs, requestBytes: 0, responseBytes: 0, messages: 0 };
    });
    socket.close(1000);
    status('');
    functionLog.quiet = false;

    const measured: MeasuredOperations = {
      measuredAt: new Date().toISOString().slice(0, 16).concat('Z'),
      where: `local gateways and Data API, ${scratch.server.split(' (')[0]}, ${availableParallelism()} CPUs`,
      operations: figures,
    };
    writeFileSync(String(args.out), `${JSON.stringify(measured, null, 2)}\n`);
    print(figures);
    console.log(`\nWritten to ${String(args.out)} (read by npm run cost).`);
  } finally {
    await ws?.close();
    await http?.close();
    await closeAppDb();
    await dataApi?.close();
    await admin.close();
    await scratch.drop();
  }
}

function print(figures: Record<string, OperationFigures>) {
  const stored = (f: OperationFigures) => Object.values(f.storedBytes).reduce((a, b) => a + b, 0);
  const cells = (f: OperationFigures) => [
    String(f.statements),
    String(f.dataApiCalls),
    String(f.walBytes),
    String(stored(f)),
    String(f.dbMs),
    String(f.durationMs),
    String(f.functionLogBytes ?? 0),
    String(f.accessLogBytes ?? 0),
  ];
  const baselines = ['health.ready', 'ws.ping'];
  const baseline = (f: OperationFigures) => figures[f.transport === 'http' ? 'health.ready' : 'ws.ping']!;
  const rows = [
    ['baselines'],
    ...baselines.map((key) => [figures[key]!.description.replace(' (baseline)', ''), ...cells(figures[key]!)]),
    ['operations, each beside its baseline'],
    ...Object.entries(figures)
      .filter(([key]) => !baselines.includes(key))
      .flatMap(([, f]) => [
        [f.description, ...cells(f)],
        [`  baseline: ${baseline(f).description.replace(' (baseline)', '')}`, ...cells(baseline(f))],
      ]),
  ];
  console.log(`
Logbook per-operation cost figures (${new Date().toISOString().slice(0, 16)}Z), per call, mean of ${calls} (time: median); load ${loadAverage()}.
${formatTable(['operation', 'statements', 'Data API calls', 'WAL bytes', 'stored bytes', 'PostgreSQL CPU ms', 'handler ms', 'function log bytes', 'access log bytes'], rows)}`);
}

main().catch((error: unknown) => {
  console.error('bench:cost failed:', error);
  process.exit(1);
});
