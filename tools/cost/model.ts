/**
 * The monthly AWS bill of a fleet of agents (docs/operations.md "Cost model"): what each agent operation costs, as
 * `npm run bench:cost` measured it on the local stack (tools/cost/operations.json), times how often the agent
 * profile makes it, at the dated price table (tools/cost/prices.json). Pure arithmetic: no file, no clock.
 */

/** How an operation reaches the service: an HTTP API request, a WebSocket message, or a connection ($connect and $disconnect). */
export type Transport = 'http' | 'ws-message' | 'ws-connection';

/** How long what an operation stores is kept, which decides what it adds to Aurora's storage. */
export type StoredClass = 'audit' | 'agentLogs' | 'eventLogs' | 'metrics' | 'churn';

/** What one call of an operation costs on the local stack, as `npm run bench:cost` measures it. */
export interface OperationFigures {
  description: string;
  transport: Transport;
  /** Statements at the API's Db seam. */
  statements: number;
  /** Requests the handler makes to the (local) RDS Data API, transactions' Begin and Commit included. */
  dataApiCalls: number;
  /** WAL the call writes (pg_current_wal_lsn before and after). */
  walBytes: number;
  /** Growth of tables and indexes per call, by how long the rows are kept. */
  storedBytes: Record<StoredClass, number>;
  /** Handler time (a connection: its $connect and $disconnect together). */
  durationMs: number;
  /** CPU time of the PostgreSQL server's processes. */
  dbMs: number;
  requestBytes: number;
  responseBytes: number;
  /** Log entries, events or samples a call carries as measured (1 for the others). */
  itemsPerCall: number;
  /** WebSocket messages a call is billed for, the client's and the replies (0 over HTTP). */
  messagesPerCall: number;
  /**
   * Calls recorded together by one run of the heartbeat queue's worker when measured (heartbeats on the connection):
   * the statements and Data API calls are that run's share per call, which the bill spreads over the batch the fleet
   * makes instead. Absent: the call reaches the database itself.
   */
  batch?: number;
  /**
   * Lambda invocations a call makes, as measured; absent: one per HTTP request or message, two per connection. A
   * message API Gateway takes itself (the keep-alive's MOCK route) makes none: it is billed as a message and logged
   * as an access-log line only.
   */
  invocationsPerCall?: number;
  /**
   * What the call's handlers write to their log, as measured in the agent functions' environment (Powertools at
   * their log level, metrics in the embedded format): bytes and lines per call. Absent: `appLogBytes` an invocation.
   */
  functionLogBytes?: number;
  functionLogLines?: number;
  /**
   * A batched call's worker run (`batch`): what it writes to its log, bytes and lines per run, apart from the calls'
   * own lines. Absent: `appLogBytes` a run.
   */
  batchLogBytes?: number;
  batchLogLines?: number;
  /** The call's access-log lines as the stages' formats render them: bytes and lines. Absent: `accessLogBytes` a line. */
  accessLogBytes?: number;
  accessLogLines?: number;
}

export interface MeasuredOperations {
  measuredAt: string;
  where: string;
  operations: Record<string, OperationFigures>;
}

/** The agent profile, the stack's settings that move the bill, and the platform assumptions. Every field is a flag of `npm run cost`. */
export interface CostInputs {
  devices: number;
  // The agent profile.
  heartbeatSeconds: number;
  heartbeatTransport: 'http' | 'websocket';
  /**
   * A keep-alive message on the WebSocket once it was quiet this long (API Gateway closes a connection idle for 10
   * minutes): between heartbeats on the connection, or all the time when heartbeats go over HTTP.
   */
  pingSeconds: number;
  /** API Gateway ends every WebSocket connection after 2 hours: at least 12 a day. */
  wsConnectsPerDay: number;
  logEntriesPerDay: number;
  logUploadsPerDay: number;
  eventLogEntriesPerDay: number;
  eventLogSubmissionsPerDay: number;
  postureUploadsPerDay: number;
  metricsUploadsPerDay: number;
  metricSamplesPerUpload: number;
  /** The share of metrics uploads a monitoring item watches (evaluated in the upload's transaction), 0 to 1. */
  watchedMetricsShare: number;
  /** Uploads of check results (service, process, script checks of the device's policies) a day. */
  checkUploadsPerDay: number;
  /**
   * The heartbeat queue's batches (infra/aws/work-queue.ts): at most this many heartbeats a worker run, gathered for
   * at most `heartbeatBatchWindowSeconds`; a fleet fills a batch with what it sends in the window.
   */
  heartbeatBatchSize: number;
  heartbeatBatchWindowSeconds: number;
  /** Minutes of the offline monitor of every device (0: none); each armed job is an SQS message and a worker run. */
  offlineMonitorMinutes: number;
  // The stack's settings.
  tracing: 'sampled' | 'all' | 'off';
  auroraStorage: 'standard' | 'io-optimized';
  autoPauseMinutes: number;
  /** Days rows are kept (0: never pruned, counted at `monthsInService`). */
  agentLogRetentionDays: number;
  eventLogRetentionDays: number;
  metricRetentionDays: number;
  auditRetentionDays: number;
  monthsInService: number;
  cloudWatchLogRetentionDays: number;
  secrets: number;
  alarms: number;
  customMetrics: number;
  schedules: number;
  // Platform assumptions.
  lambdaMemoryMb: number;
  /** Lambda's handler time against the local one (512 MB is about a third of a vCPU). */
  lambdaSlowdown: number;
  /** What one Data API call adds to a handler's time in a region, beyond the local emulation's. */
  dataApiLatencyMs: number;
  /** Whether each Data API call is also a billed Secrets Manager read (see the docs): reads per call. */
  secretReadsPerDataApiCall: number;
  /** Lambda's START, END and REPORT lines per invocation. */
  platformLogBytes: number;
  /** The function's own lines per invocation, for an operation whose figures do not measure them. */
  appLogBytes: number;
  /** An access-log line per HTTP request, WebSocket message or connection event, where not measured. */
  accessLogBytes: number;
  /** What CloudWatch Logs counts per log event beside its message (PutLogEvents' 26 bytes). */
  logEventOverheadBytes: number;
  /** Stored CloudWatch Logs are billed compressed. */
  logCompression: number;
  minAcu: number;
  /** vCPUs of one ACU (2 GiB of memory "and corresponding CPU": a db.r6g.large is 2 vCPUs and 16 GiB, 8 ACU). */
  vcpuPerAcu: number;
  /** How busy Aurora runs its ACUs before it scales up. */
  acuTargetUtilization: number;
  baseStorageGb: number;
  backupRetentionDays: number;
}

export const defaultInputs: Omit<CostInputs, 'devices'> = {
  heartbeatSeconds: 900,
  heartbeatTransport: 'websocket',
  pingSeconds: 540,
  wsConnectsPerDay: 12,
  logEntriesPerDay: 100,
  logUploadsPerDay: 24,
  eventLogEntriesPerDay: 50,
  eventLogSubmissionsPerDay: 4,
  postureUploadsPerDay: 1,
  metricsUploadsPerDay: 96,
  metricSamplesPerUpload: 60,
  watchedMetricsShare: 1,
  checkUploadsPerDay: 0,
  heartbeatBatchSize: 100,
  heartbeatBatchWindowSeconds: 5,
  offlineMonitorMinutes: 0,
  tracing: 'off',
  auroraStorage: 'standard',
  autoPauseMinutes: 5,
  agentLogRetentionDays: 30,
  eventLogRetentionDays: 90,
  metricRetentionDays: 30,
  auditRetentionDays: 365,
  monthsInService: 12,
  cloudWatchLogRetentionDays: 30,
  secrets: 5,
  alarms: 17,
  customMetrics: 14,
  schedules: 2,
  lambdaMemoryMb: 512,
  lambdaSlowdown: 2,
  dataApiLatencyMs: 5,
  secretReadsPerDataApiCall: 1,
  platformLogBytes: 0,
  appLogBytes: 300,
  accessLogBytes: 450,
  logEventOverheadBytes: 26,
  logCompression: 0.2,
  minAcu: 0.5,
  vcpuPerAcu: 0.25,
  acuTargetUtilization: 0.5,
  baseStorageGb: 1,
  backupRetentionDays: 7,
};

/** The price table (tools/cost/prices.json). */
export interface Prices {
  region: string;
  asOf: string;
  apiGateway: {
    httpRequestsPerMillion: number;
    httpRequestsPerMillionAbove300M: number;
    httpMeteredBytes: number;
    wsMessagesPerMillion: number;
    wsMessagesPerMillionAbove1B: number;
    wsMeteredBytes: number;
    wsConnectionMinutesPerMillion: number;
  };
  lambda: { requestsPerMillion: number; armGbSecond: number };
  dataApi: { requestsPerMillion: number; requestsPerMillionAbove1B: number; meteredBytes: number };
  aurora: {
    standardAcuHour: number;
    ioOptimizedAcuHour: number;
    standardStorageGbMonth: number;
    ioOptimizedStorageGbMonth: number;
    ioRequestsPerMillion: number;
    backupGbMonth: number;
  };
  secretsManager: { secretMonth: number; apiCallsPer10k: number };
  cloudWatch: { logsIngestedGb: number; logsStoredGbMonth: number; metricMonth: number; standardAlarmMonth: number };
  xray: { tracesRecordedPerMillion: number };
  sqs: { requestsPerMillion: number };
  scheduler: { invocationsPerMillion: number };
  transfer: { outToInternetGb: number };
}

/**
 * An agent operation the bill counts: its figures in tools/cost/operations.json (by `key`, which `npm run bench:cost`
 * writes) and how often one device makes it. An operation the bench does not measure yet can be estimated from
 * another's figures, and says so in the bill.
 */
interface OperationUse {
  key: string;
  callsPerDay(p: CostInputs): number;
  /** Items per call in the profile, against the measured `itemsPerCall` (WAL, stored and request bytes scale with it). */
  itemsPerCall?(p: CostInputs): number;
  estimate?: { from: string; how: string; derive(figures: OperationFigures): OperationFigures };
}

const perDay = (seconds: number) => (seconds > 0 ? 86_400 / seconds : 0);
const heartbeatsOver = (p: CostInputs, transport: CostInputs['heartbeatTransport']) =>
  p.heartbeatTransport === transport ? perDay(p.heartbeatSeconds) : 0;
const ratio = (n: number, d: number) => (d > 0 ? n / d : 0);
/** A call's Lambda time as billed: its local handler time slowed to the function's share of a vCPU, and its Data API calls. */
const billedMs = (call: { durationMs: number; dataApiCalls: number }, p: CostInputs) =>
  call.durationMs * p.lambdaSlowdown + call.dataApiCalls * p.dataApiLatencyMs;

/** Every agent operation of the bill: a new one is an entry here and its measurement in bench/cost.ts. */
export const operationUses: OperationUse[] = [
  { key: 'heartbeat.http', callsPerDay: (p) => heartbeatsOver(p, 'http') },
  {
    key: 'heartbeat.websocket',
    callsPerDay: (p) => heartbeatsOver(p, 'websocket'),
    estimate: {
      from: 'heartbeat.http',
      how: 'the HTTP heartbeat without its token lookup, as a message and its reply',
      derive: (f) => ({
        ...f,
        description: 'heartbeat message on the agent WebSocket (estimated)',
        transport: 'ws-message',
        statements: Math.max(0, f.statements - 1),
        dataApiCalls: Math.max(0, f.dataApiCalls - 1),
        messagesPerCall: 2,
      }),
    },
  },
  // A heartbeat on the connection keeps it open: a keep-alive goes only in a quiet spell of `pingSeconds` between
  // two heartbeats (900 s apart, 540 s of quiet: one keep-alive between them).
  {
    key: 'ws.ping',
    callsPerDay: (p) => {
      if (p.pingSeconds <= 0) return 0;
      if (p.heartbeatTransport !== 'websocket') return perDay(p.pingSeconds);
      return perDay(p.heartbeatSeconds) * Math.max(0, Math.ceil(p.heartbeatSeconds / p.pingSeconds) - 1);
    },
  },
  { key: 'ws.connect', callsPerDay: (p) => p.wsConnectsPerDay },
  {
    key: 'logs.upload',
    callsPerDay: (p) => (p.logEntriesPerDay > 0 ? p.logUploadsPerDay : 0),
    itemsPerCall: (p) => ratio(p.logEntriesPerDay, p.logUploadsPerDay),
  },
  {
    key: 'eventlogs.submit',
    callsPerDay: (p) => (p.eventLogEntriesPerDay > 0 ? p.eventLogSubmissionsPerDay : 0),
    itemsPerCall: (p) => ratio(p.eventLogEntriesPerDay, p.eventLogSubmissionsPerDay),
  },
  { key: 'posture.upload', callsPerDay: (p) => p.postureUploadsPerDay },
  {
    key: 'metrics.upload',
    callsPerDay: (p) => p.metricsUploadsPerDay * (1 - Math.min(1, p.watchedMetricsShare)),
    itemsPerCall: (p) => p.metricSamplesPerUpload,
  },
  {
    key: 'metrics.upload.watched',
    callsPerDay: (p) => p.metricsUploadsPerDay * Math.min(1, p.watchedMetricsShare),
    itemsPerCall: (p) => p.metricSamplesPerUpload,
    estimate: {
      from: 'metrics.upload',
      how: 'as an upload no item watches (figures measured before watched uploads were)',
      derive: (f) => f,
    },
  },
  { key: 'checks.upload', callsPerDay: (p) => p.checkUploadsPerDay },
];

/**
 * The heartbeats a worker run of the heartbeat queue records: what the fleet sends in the batching window, at least
 * one, at most the batch size.
 */
export function batchOf(p: CostInputs, perDevicePerDay: number): number {
  const inWindow = (p.devices * perDevicePerDay * p.heartbeatBatchWindowSeconds) / 86_400;
  return Math.min(p.heartbeatBatchSize, Math.max(1, inWindow));
}

/** One job of the offline monitor (not measured: a queue worker run reading the device and re-arming it). */
const offlineJob = { dataApiCalls: 3, durationMs: 40, walBytes: 300 } as const;
/**
 * The presence check a $disconnect arms for the grace (not measured: a queue worker run of one statement that reads
 * the device, and device.offline queued when it is still away, which the profile does not count).
 */
const presenceJob = { dataApiCalls: 1, durationMs: 10 } as const;

export interface BillLine {
  label: string;
  /** The quantity billed, in words. */
  quantity: string;
  usd: number;
}

export interface Bill {
  lines: BillLine[];
  total: number;
  perDevice: number;
  /** Operations estimated from another's figures (not measured yet), with how. */
  estimated: string[];
  /** Calls per device per month, by operation. */
  calls: Record<string, number>;
  /** The batch a worker run records, by batched operation (heartbeats on the connection). */
  batches: Record<string, number>;
}

const daysPerMonth = 365 / 12;
const hoursPerMonth = 24 * daysPerMonth;
const secondsPerMonth = 3600 * hoursPerMonth;
const GB = 1024 ** 3;
const million = 1e6;

/** Two price tiers: `first` per million up to `threshold` units a month, `then` beyond. */
const tiered = (units: number, threshold: number, first: number, then: number) =>
  (Math.min(units, threshold) * first + Math.max(0, units - threshold) * then) / million;

const count = (n: number) => {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
};

function figuresOf(use: OperationUse, measured: MeasuredOperations, estimated: string[]): OperationFigures {
  const own = measured.operations[use.key];
  if (own) return own;
  const source = use.estimate && measured.operations[use.estimate.from];
  if (!use.estimate || !source)
    throw new Error(`tools/cost/operations.json has no figures for ${use.key}: run npm run bench:cost`);
  estimated.push(`${use.key}: ${use.estimate.how}`);
  return use.estimate.derive(source);
}

/** The month's bill of `inputs.devices` devices. */
export function computeBill(inputs: CostInputs, measured: MeasuredOperations, prices: Prices): Bill {
  const p = inputs;
  const estimated: string[] = [];
  const calls: Record<string, number> = {};
  const t = {
    httpUnits: 0,
    wsMessageUnits: 0,
    invocations: 0,
    gbSeconds: 0,
    dataApiCalls: 0,
    dataApiUnits: 0,
    dbSeconds: 0,
    walBytes: 0,
    writeIos: 0,
    transferBytes: 0,
    logBytes: 0,
    storedPerDay: { audit: 0, agentLogs: 0, eventLogs: 0, metrics: 0, churn: 0 } as Record<StoredClass, number>,
    dbCallsPerDay: 0,
    queueRequests: 0,
  };
  const batches: Record<string, number> = {};
  /** Log bytes as measured, each line a log event of its overhead more; `assumed` where not measured. */
  const logged = (bytes: number | undefined, lines: number | undefined, assumed: number) =>
    bytes === undefined ? assumed : bytes + (lines ?? 0) * p.logEventOverheadBytes;
  const gbPerMs = p.lambdaMemoryMb / 1024 / 1000;

  for (const use of operationUses) {
    const perDevicePerDay = use.callsPerDay(p);
    if (perDevicePerDay <= 0) continue;
    const f = figuresOf(use, measured, estimated);
    const scale = use.itemsPerCall ? ratio(use.itemsPerCall(p), f.itemsPerCall) : 1;
    const n = p.devices * perDevicePerDay * daysPerMonth;
    calls[use.key] = perDevicePerDay * daysPerMonth;
    const invocations = f.invocationsPerCall ?? (f.transport === 'ws-connection' ? 2 : 1);
    const requestBytes = f.requestBytes * scale;
    if (f.transport === 'http')
      t.httpUnits += n * Math.max(1, Math.ceil(requestBytes / prices.apiGateway.httpMeteredBytes));
    if (f.transport === 'ws-message')
      t.wsMessageUnits +=
        n * f.messagesPerCall * Math.max(1, Math.ceil(requestBytes / prices.apiGateway.wsMeteredBytes));
    // The function logs, as measured or at the assumed bytes an invocation; the access logs, as measured or a line
    // per request, per message the agent sends, per $connect and $disconnect. Each line is a log event.
    const functionLog =
      invocations * p.platformLogBytes + logged(f.functionLogBytes, f.functionLogLines, invocations * p.appLogBytes);
    const accessLog = logged(
      f.accessLogBytes,
      f.accessLogLines,
      (f.transport === 'ws-connection' ? 2 : 1) * p.accessLogBytes,
    );
    t.logBytes += n * (functionLog + accessLog);
    t.invocations += n * invocations;
    // A batched call's statements are its share of a worker run: spread over the batch the fleet fills instead, and
    // the run is a worker invocation and SQS's receive and deletes (10 a request), beside each call's send.
    const batch = f.batch ? batchOf(p, perDevicePerDay) : 1;
    const dataApiCalls = f.batch ? (f.dataApiCalls * f.batch) / batch : f.dataApiCalls;
    if (f.batch) {
      t.invocations += n / batch;
      // The worker's run writes its lines once per run, as measured per run or assumed.
      t.logBytes += (n / batch) * (p.platformLogBytes + logged(f.batchLogBytes, f.batchLogLines, p.appLogBytes));
      t.queueRequests += n + (n / batch) * (1 + Math.ceil(batch / 10));
      batches[use.key] = batch;
    }
    if (invocations > 0)
      t.gbSeconds += n * Math.max(invocations, Math.ceil(billedMs({ ...f, dataApiCalls }, p))) * gbPerMs;
    t.dataApiCalls += n * dataApiCalls;
    t.dataApiUnits +=
      n * dataApiCalls + n * Math.floor(requestBytes / prices.dataApi.meteredBytes) * Math.min(1, dataApiCalls);
    t.dbSeconds += (n * f.dbMs) / 1000;
    const wal = f.walBytes * scale;
    t.walBytes += n * wal;
    // A batch makes its WAL durable together: its I/Os are the batch's.
    t.writeIos += wal > 0 ? (n / batch) * Math.ceil((wal * batch) / 4096) : 0;
    t.transferBytes += n * f.responseBytes;
    for (const key of Object.keys(t.storedPerDay) as StoredClass[])
      t.storedPerDay[key] += p.devices * perDevicePerDay * f.storedBytes[key] * scale;
    if (f.dataApiCalls > 0) t.dbCallsPerDay += (p.devices * perDevicePerDay) / batch;
  }

  // The offline monitor: one job per window, sent on every 15 minutes (SQS's longest delay) until due; with heartbeats
  // on the connection, one per closed connection (the connection keeps the device online, nothing is armed meanwhile).
  const windows =
    p.heartbeatTransport === 'websocket'
      ? p.wsConnectsPerDay * daysPerMonth
      : (1440 * daysPerMonth) / p.offlineMonitorMinutes;
  const jobsPerMonth = p.offlineMonitorMinutes > 0 ? p.devices * windows : 0;
  // Each closed connection arms its presence check, due after the grace (5 minutes: one hop).
  const presenceJobs = p.devices * p.wsConnectsPerDay * daysPerMonth;
  const offlineHops = jobsPerMonth * Math.ceil(p.offlineMonitorMinutes / 15);
  const hops = offlineHops + presenceJobs;
  t.invocations += presenceJobs;
  t.logBytes += presenceJobs * (p.platformLogBytes + p.appLogBytes);
  t.gbSeconds += presenceJobs * Math.ceil(billedMs(presenceJob, p)) * gbPerMs;
  t.dataApiCalls += presenceJobs * presenceJob.dataApiCalls;
  t.dataApiUnits += presenceJobs * presenceJob.dataApiCalls;
  if (jobsPerMonth > 0) {
    // A heartbeat of a device with an offline monitor reads its armed state: one statement more (docs/benchmarks.md).
    const heartbeats = p.devices * perDay(p.heartbeatSeconds) * daysPerMonth;
    t.dataApiCalls += heartbeats;
    t.dataApiUnits += heartbeats;
    t.invocations += offlineHops;
    t.logBytes += offlineHops * (p.platformLogBytes + p.appLogBytes);
    t.gbSeconds += offlineHops * Math.ceil(billedMs(offlineJob, p)) * gbPerMs;
    t.dataApiCalls += jobsPerMonth * offlineJob.dataApiCalls;
    t.dataApiUnits += jobsPerMonth * offlineJob.dataApiCalls;
    t.walBytes += jobsPerMonth * offlineJob.walBytes;
    t.writeIos += jobsPerMonth;
  }

  const lines: BillLine[] = [];
  const line = (label: string, quantity: string, usd: number) => lines.push({ label, quantity, usd });
  const ag = prices.apiGateway;
  line(
    'API Gateway HTTP API requests',
    `${count(t.httpUnits)} requests`,
    tiered(t.httpUnits, 300e6, ag.httpRequestsPerMillion, ag.httpRequestsPerMillionAbove300M),
  );
  line(
    'API Gateway WebSocket messages',
    `${count(t.wsMessageUnits)} messages`,
    tiered(t.wsMessageUnits, 1e9, ag.wsMessagesPerMillion, ag.wsMessagesPerMillionAbove1B),
  );
  // Every agent holds its connection around the clock.
  const connectionMinutes = p.devices * 60 * hoursPerMonth;
  line(
    'API Gateway WebSocket connection minutes',
    `${count(connectionMinutes)} minutes`,
    (connectionMinutes * ag.wsConnectionMinutesPerMillion) / million,
  );
  line(
    'Lambda requests',
    `${count(t.invocations)} invocations`,
    (t.invocations * prices.lambda.requestsPerMillion) / million,
  );
  line(
    `Lambda duration (arm64, ${p.lambdaMemoryMb} MB)`,
    `${count(t.gbSeconds)} GB-s`,
    t.gbSeconds * prices.lambda.armGbSecond,
  );
  const da = prices.dataApi;
  line(
    'RDS Data API requests',
    `${count(t.dataApiUnits)} requests`,
    tiered(t.dataApiUnits, 1e9, da.requestsPerMillion, da.requestsPerMillionAbove1B),
  );

  const io = p.auroraStorage === 'io-optimized';
  const au = prices.aurora;
  // Aurora pauses only after autoPauseMinutes without a statement from any agent (docs: "What wakes Aurora").
  const gapSeconds = t.dbCallsPerDay > 0 ? 86_400 / t.dbCallsPerDay : Infinity;
  const awake = Math.min(1, (p.autoPauseMinutes * 60) / gapSeconds);
  const loadAcu = t.dbSeconds / secondsPerMonth / (p.vcpuPerAcu * p.acuTargetUtilization);
  const acuHours = Math.max(p.minAcu, loadAcu) * hoursPerMonth * awake;
  line(
    `Aurora Serverless v2 capacity (${io ? 'I/O-Optimized' : 'Standard'}; ${awake >= 1 ? `${p.minAcu} ACU floor, never pauses` : 'auto-pauses between agents'}; load ${loadAcu.toFixed(2)} ACU)`,
    `${count(acuHours)} ACU-hours`,
    acuHours * (io ? au.ioOptimizedAcuHour : au.standardAcuHour),
  );
  const keptDays = (days: number) => (days > 0 ? days : p.monthsInService * daysPerMonth);
  const s = t.storedPerDay;
  const storedGb =
    p.baseStorageGb +
    (s.audit * keptDays(p.auditRetentionDays) +
      s.agentLogs * keptDays(p.agentLogRetentionDays) +
      s.eventLogs * keptDays(p.eventLogRetentionDays) +
      s.metrics * keptDays(p.metricRetentionDays) +
      s.churn) /
      GB;
  line(
    'Aurora storage',
    `${count(storedGb)} GB-month`,
    storedGb * (io ? au.ioOptimizedStorageGbMonth : au.standardStorageGbMonth),
  );
  line(
    `Aurora I/O (${io ? 'included in I/O-Optimized' : 'Standard: write I/Os of 4 KB of WAL; reads from cache'})`,
    `${count(t.writeIos)} I/Os`,
    io ? 0 : (t.writeIos * au.ioRequestsPerMillion) / million,
  );
  // Backups up to the cluster's size are free; the continuous backup keeps backupRetentionDays of changes.
  const backupGb = Math.max(0, ((t.walBytes / daysPerMonth) * p.backupRetentionDays) / GB - storedGb);
  line('Aurora backup storage', `${count(backupGb)} GB-month`, backupGb * au.backupGbMonth);

  const sm = prices.secretsManager;
  line('Secrets Manager secrets', `${p.secrets} secrets`, p.secrets * sm.secretMonth);
  const secretReads = t.dataApiCalls * p.secretReadsPerDataApiCall;
  line(
    'Secrets Manager API calls (the Data API reading the role secret)',
    `${count(secretReads)} calls`,
    (secretReads / 10_000) * sm.apiCallsPer10k,
  );

  const cw = prices.cloudWatch;
  const logBytes = t.logBytes;
  line('CloudWatch Logs ingestion', `${count(logBytes / GB)} GB`, (logBytes / GB) * cw.logsIngestedGb);
  const storedLogGb = ((logBytes / GB) * p.logCompression * p.cloudWatchLogRetentionDays) / daysPerMonth;
  line('CloudWatch Logs storage', `${count(storedLogGb)} GB-month`, storedLogGb * cw.logsStoredGbMonth);
  line('CloudWatch metrics', `${p.customMetrics} metrics`, p.customMetrics * cw.metricMonth);
  line('CloudWatch alarms', `${p.alarms} alarms`, p.alarms * cw.standardAlarmMonth);

  // Lambda's default sampling rule: the first request each second and 5 % of the others.
  const reservoir = secondsPerMonth;
  const traces =
    p.tracing === 'off'
      ? 0
      : p.tracing === 'all'
        ? t.invocations
        : Math.min(t.invocations, reservoir) + 0.05 * Math.max(0, t.invocations - reservoir);
  line(
    `X-Ray traces (tracing ${p.tracing})`,
    `${count(traces)} traces`,
    (traces * prices.xray.tracesRecordedPerMillion) / million,
  );
  // Each hop: send, receive, delete; the heartbeat queue's sends, and receives and deletes per batch.
  const sqsRequests = hops * 3 + t.queueRequests;
  line(
    'SQS requests (presence checks, offline monitor jobs, heartbeat queue)',
    `${count(sqsRequests)} requests`,
    (sqsRequests * prices.sqs.requestsPerMillion) / million,
  );
  const schedules = p.schedules * daysPerMonth;
  line(
    'EventBridge Scheduler invocations',
    `${count(schedules)} invocations`,
    (schedules * prices.scheduler.invocationsPerMillion) / million,
  );
  const transferGb = t.transferBytes / GB;
  line('Data transfer out', `${count(transferGb)} GB`, transferGb * prices.transfer.outToInternetGb);

  const total = lines.reduce((sum, l) => sum + l.usd, 0);
  return { lines, total, perDevice: total / p.devices, estimated, calls, batches };
}

/** The bill as `npm run cost` prints it: one line per cost line, the last `total <amount> USD/month, <amount> USD/device`. */
export function formatBill(bill: Bill): string {
  const width = Math.max(...bill.lines.map((l) => l.label.length));
  const quantityWidth = Math.max(...bill.lines.map((l) => l.quantity.length));
  const rows = bill.lines.map(
    (l) => `${l.label.padEnd(width)}  ${l.quantity.padStart(quantityWidth)}  ${l.usd.toFixed(2).padStart(9)} USD`,
  );
  return [...rows, `total ${bill.total.toFixed(2)} USD/month, ${bill.perDevice.toFixed(3)} USD/device`].join('\n');
}
