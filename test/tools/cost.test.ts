import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useCli } from '#test/support/cli.ts';
import {
  type CostInputs,
  computeBill,
  defaultInputs,
  formatBill,
  type MeasuredOperations,
  type OperationFigures,
  type Prices,
} from '#tools/cost/model.ts';

/** The list prices of the table, held here so that a new table does not change what the arithmetic must give. */
const prices: Prices = {
  region: 'us-east-1',
  asOf: '2026-11-27',
  apiGateway: {
    httpRequestsPerMillion: 1,
    httpRequestsPerMillionAbove300M: 0.9,
    httpMeteredBytes: 524_288,
    wsMessagesPerMillion: 1,
    wsMessagesPerMillionAbove1B: 0.8,
    wsMeteredBytes: 32_768,
    wsConnectionMinutesPerMillion: 0.25,
  },
  lambda: { requestsPerMillion: 0.2, armGbSecond: 0.0000133334 },
  dataApi: { requestsPerMillion: 0.35, requestsPerMillionAbove1B: 0.2, meteredBytes: 32_768 },
  aurora: {
    standardAcuHour: 0.12,
    ioOptimizedAcuHour: 0.156,
    standardStorageGbMonth: 0.1,
    ioOptimizedStorageGbMonth: 0.225,
    ioRequestsPerMillion: 0.2,
    backupGbMonth: 0.021,
  },
  secretsManager: { secretMonth: 0.4, apiCallsPer10k: 0.05 },
  cloudWatch: { logsIngestedGb: 0.5, logsStoredGbMonth: 0.03, metricMonth: 0.3, standardAlarmMonth: 0.1 },
  xray: { tracesRecordedPerMillion: 5 },
  sqs: { requestsPerMillion: 0.4 },
  scheduler: { invocationsPerMillion: 1 },
  transfer: { outToInternetGb: 0.09 },
};

const noStorage = { audit: 0, agentLogs: 0, eventLogs: 0, metrics: 0, churn: 0 };
const heartbeat: OperationFigures = {
  description: 'heartbeat',
  transport: 'http',
  statements: 2,
  dataApiCalls: 2,
  walBytes: 1000,
  storedBytes: noStorage,
  durationMs: 10,
  dbMs: 1,
  requestBytes: 100,
  responseBytes: 1000,
  itemsPerCall: 1,
  messagesPerCall: 0,
};
/** A heartbeat on the connection, measured in a batch of 50: 2 Data API calls for the batch, 0.04 a heartbeat. */
const batchedHeartbeat: OperationFigures = {
  ...heartbeat,
  transport: 'ws-message',
  dataApiCalls: 0.04,
  messagesPerCall: 2,
  batch: 50,
};
const measured: MeasuredOperations = {
  measuredAt: '2026-11-27T03:00Z',
  where: 'test',
  operations: { 'heartbeat.http': heartbeat },
};

/** 1,000 devices that only heartbeat, every minute over HTTP: 43.8 million heartbeats a month (365/12 days). */
const onlyHeartbeats: CostInputs = {
  ...defaultInputs,
  devices: 1000,
  heartbeatSeconds: 60,
  heartbeatTransport: 'http',
  pingSeconds: 0,
  wsConnectsPerDay: 0,
  logEntriesPerDay: 0,
  eventLogEntriesPerDay: 0,
  postureUploadsPerDay: 0,
  metricsUploadsPerDay: 0,
  tracing: 'all',
  lambdaMemoryMb: 1024,
  lambdaSlowdown: 1,
  dataApiLatencyMs: 5,
  secretReadsPerDataApiCall: 1,
  platformLogBytes: 500,
  appLogBytes: 0,
  accessLogBytes: 500,
  secrets: 4,
  alarms: 10,
  customMetrics: 10,
  schedules: 0,
  baseStorageGb: 0,
};

const cents = (bill: ReturnType<typeof computeBill>) =>
  Object.fromEntries(bill.lines.map((line) => [line.label.replace(/ \(.*$/, ''), line.usd.toFixed(2)]));

describe('the cost model', () => {
  it('bills a known profile line by line', () => {
    const bill = computeBill(onlyHeartbeats, measured, prices);
    expect(bill.calls).toEqual({ 'heartbeat.http': 1440 * (365 / 12) });
    expect(cents(bill)).toEqual({
      'API Gateway HTTP API requests': '43.80', // 43.8 M requests at $1 per million
      'API Gateway WebSocket messages': '0.00',
      'API Gateway WebSocket connection minutes': '10.95', // every device connected: 43.8 M minutes at $0.25
      'Lambda requests': '8.76',
      'Lambda duration': '11.68', // 10 ms + 2 Data API calls of 5 ms, at 1 GB: 876,000 GB-s
      'RDS Data API requests': '30.66', // 87.6 M at $0.35
      'Aurora Serverless v2 capacity': '43.80', // the 0.5 ACU floor all month: 365 ACU-hours at $0.12
      'Aurora storage': '0.00',
      'Aurora I/O': '8.76', // 1,000 bytes of WAL: one 4 KB write I/O per heartbeat
      'Aurora backup storage': '0.20', // 7 days of 1.44 GB of WAL beyond the (empty) volume
      'Secrets Manager secrets': '1.60',
      'Secrets Manager API calls': '438.00', // one read per Data API call: 87.6 M at $0.05 per 10,000
      'CloudWatch Logs ingestion': '20.40', // 1,000 bytes a heartbeat: 40.8 GB
      'CloudWatch Logs storage': '0.24',
      'CloudWatch metrics': '3.00',
      'CloudWatch alarms': '1.00',
      'X-Ray traces': '219.00',
      'SQS requests': '0.00',
      'EventBridge Scheduler invocations': '0.00',
      'Data transfer out': '3.67',
    });
    expect(bill.total).toBeCloseTo(845.52, 2);
    expect(formatBill(bill).split('\n').at(-1)).toBe('total 845.52 USD/month, 0.846 USD/device');
  });

  it('bills per device: twice the fleet, twice the usage lines, the same fixed ones', () => {
    const one = computeBill(onlyHeartbeats, measured, prices);
    const two = computeBill({ ...onlyHeartbeats, devices: 2000 }, measured, prices);
    expect(cents(two)['API Gateway HTTP API requests']).toBe('87.60');
    expect(cents(two)['Secrets Manager secrets']).toBe(cents(one)['Secrets Manager secrets']);
    expect(two.perDevice).toBeLessThan(one.perDevice);
    expect(two.perDevice).toBeCloseTo(two.total / 2000, 10);
  });

  it('carries the heartbeat on the WebSocket, estimated from the HTTP one until it is measured', () => {
    const bill = computeBill({ ...onlyHeartbeats, heartbeatTransport: 'websocket' }, measured, prices);
    expect(bill.estimated).toEqual([
      'heartbeat.websocket: the HTTP heartbeat without its token lookup, as a message and its reply',
    ]);
    const lines = cents(bill);
    expect(lines['API Gateway HTTP API requests']).toBe('0.00');
    expect(lines['API Gateway WebSocket messages']).toBe('87.60'); // the heartbeat and its acknowledgement
    expect(lines['RDS Data API requests']).toBe('15.33'); // one call each: no token lookup
  });

  it('prices tracing off, and the default sampling of the first request each second and 5 % of the others', () => {
    expect(cents(computeBill({ ...onlyHeartbeats, tracing: 'off' }, measured, prices))['X-Ray traces']).toBe('0.00');
    const sampled = 2_628_000 + 0.05 * (43_800_000 - 2_628_000);
    expect(cents(computeBill({ ...onlyHeartbeats, tracing: 'sampled' }, measured, prices))['X-Ray traces']).toBe(
      ((sampled * 5) / 1e6).toFixed(2),
    );
  });

  it('keeps stored rows for their retention, or for the months in service when never pruned', () => {
    const logs: OperationFigures = {
      ...heartbeat,
      description: 'log upload',
      storedBytes: { ...noStorage, agentLogs: 1024 ** 3 / 1000 / 100 },
      itemsPerCall: 10,
    };
    const withLogs: MeasuredOperations = { ...measured, operations: { ...measured.operations, 'logs.upload': logs } };
    // 1,000 devices, 100 uploads a day of 10 entries: 1 GB a day.
    const profile = { ...onlyHeartbeats, logEntriesPerDay: 1000, logUploadsPerDay: 100 };
    const storage = (p: CostInputs) => cents(computeBill(p, withLogs, prices))['Aurora storage'];
    expect(storage({ ...profile, agentLogRetentionDays: 30 })).toBe('3.00');
    expect(storage({ ...profile, agentLogRetentionDays: 0, monthsInService: 12 })).toBe('36.50');
    // Twice the entries in as many uploads: twice the bytes.
    expect(storage({ ...profile, logEntriesPerDay: 2000, agentLogRetentionDays: 30 })).toBe('6.00');
  });

  it('bills the offline monitor: a job per window on the queue, one statement more per heartbeat', () => {
    const bill = cents(computeBill({ ...onlyHeartbeats, offlineMonitorMinutes: 15 }, measured, prices));
    // 96 windows a day: 2.92 M jobs, each sent, received and deleted once.
    expect(bill['SQS requests']).toBe('3.50');
    // 87.6 M calls of the heartbeats, 43.8 M more for the armed state, 3 per job.
    expect(bill['RDS Data API requests']).toBe((((87.6e6 + 43.8e6 + 3 * 2.92e6) * 0.35) / 1e6).toFixed(2));
  });

  it('bills the agent contract on a connection: a keep-alive only in a quiet spell, a presence check per closed connection', () => {
    const quiet = {
      ...heartbeat,
      transport: 'ws-message' as const,
      statements: 0,
      dataApiCalls: 0,
      messagesPerCall: 1,
    };
    const connect = { ...heartbeat, transport: 'ws-connection' as const, messagesPerCall: 0 };
    const withConnection: MeasuredOperations = {
      ...measured,
      operations: { ...measured.operations, 'ws.ping': quiet, 'ws.connect': connect },
    };
    const profile = {
      ...onlyHeartbeats,
      heartbeatTransport: 'websocket' as const,
      heartbeatSeconds: 900,
      pingSeconds: 540,
      wsConnectsPerDay: 12,
    };
    const bill = computeBill(profile, withConnection, prices);
    // 96 heartbeats a day, one keep-alive in each 900 s gap (quiet for 540 s), 12 connections.
    expect(bill.calls['heartbeat.websocket']).toBeCloseTo(96 * (365 / 12), 6);
    expect(bill.calls['ws.ping']).toBeCloseTo(96 * (365 / 12), 6);
    expect(bill.calls['ws.connect']).toBeCloseTo(12 * (365 / 12), 6);
    // Each closed connection's presence check: one SQS hop (send, receive, delete) for 1,000 devices.
    expect(cents(bill)['SQS requests']).toBe(((1000 * 12 * (365 / 12) * 3 * 0.4) / 1e6).toFixed(2));
    // Heartbeats no further apart than the quiet spell need no keep-alive.
    expect(computeBill({ ...profile, heartbeatSeconds: 300 }, withConnection, prices).calls['ws.ping'] ?? 0).toBe(0);
  });

  it('bills a keep-alive API Gateway takes itself as a message and an access-log line, with no Lambda invocation', () => {
    const ping = { ...heartbeat, transport: 'ws-message' as const, statements: 0, dataApiCalls: 0, messagesPerCall: 1 };
    const profile = {
      ...onlyHeartbeats,
      heartbeatSeconds: 900,
      heartbeatTransport: 'websocket' as const,
      pingSeconds: 540,
    };
    const usd = (figures: OperationFigures) =>
      Object.fromEntries(
        computeBill(
          profile,
          { ...measured, operations: { ...measured.operations, 'ws.ping': figures } },
          prices,
        ).lines.map((line) => [line.label.replace(/ \(.*$/, ''), line.usd]),
      );
    const byLambda = usd(ping);
    const byGateway = usd({ ...ping, invocationsPerCall: 0 });
    // 1,000 devices, one keep-alive in each of 96 gaps a day: their invocations and their platform lines (500 bytes)
    // go; the message and its access-log line (500 bytes) stay.
    const pings = 1000 * 96 * (365 / 12);
    expect(byLambda['Lambda requests']! - byGateway['Lambda requests']!).toBeCloseTo((pings * 0.2) / 1e6, 6);
    expect(byLambda['Lambda duration']! - byGateway['Lambda duration']!).toBeGreaterThan(0);
    expect(byGateway['API Gateway WebSocket messages']).toBe(byLambda['API Gateway WebSocket messages']);
    expect(byLambda['CloudWatch Logs ingestion']! - byGateway['CloudWatch Logs ingestion']!).toBeCloseTo(
      (pings * 500 * 0.5) / 1024 ** 3,
      6,
    );
  });

  it('bills the log bytes an operation was measured to write, each line a log event of 26 bytes more, else the assumed ones', () => {
    const logs = (figures: OperationFigures) =>
      computeBill(onlyHeartbeats, { ...measured, operations: { 'heartbeat.http': figures } }, prices).lines.find(
        (line) => line.label === 'CloudWatch Logs ingestion',
      )!.usd;
    const heartbeats = 1000 * 1440 * (365 / 12);
    const gb = (bytes: number) => (heartbeats * bytes) / 1024 ** 3;
    // Assumed: the platform's 500 bytes, no function line, an access-log line of 500 bytes.
    expect(logs(heartbeat)).toBeCloseTo(gb(500 + 0 + 500) * 0.5, 6);
    // Measured: an embedded-format metric line of 180 bytes and an access-log line of 240, each with its 26 bytes.
    const measuredLogs = {
      ...heartbeat,
      functionLogBytes: 180,
      functionLogLines: 1,
      accessLogBytes: 240,
      accessLogLines: 1,
    };
    expect(logs(measuredLogs)).toBeCloseTo(gb(500 + 180 + 26 + 240 + 26) * 0.5, 6);
    // Measured as nothing written: the platform's lines alone, and the access log.
    expect(logs({ ...measuredLogs, functionLogBytes: 0, functionLogLines: 0 })).toBeCloseTo(
      gb(500 + 240 + 26) * 0.5,
      6,
    );
  });

  it("counts a presence check's invocation and log once, with the offline monitor's jobs beside them", () => {
    const line = (bill: ReturnType<typeof computeBill>, label: string) =>
      bill.lines.find((each) => each.label.startsWith(label))!.usd;
    const connects: MeasuredOperations = {
      ...measured,
      operations: {
        'ws.connect': { ...heartbeat, transport: 'ws-connection', requestBytes: 0, responseBytes: 0 },
        'heartbeat.websocket': { ...heartbeat, transport: 'ws-message', messagesPerCall: 2 },
      },
    };
    const profile = {
      ...onlyHeartbeats,
      heartbeatTransport: 'websocket' as const,
      heartbeatSeconds: 900,
      wsConnectsPerDay: 12,
    };
    const off = computeBill({ ...profile, offlineMonitorMinutes: 0 }, connects, prices);
    // 10 minutes: one hop a job, one job a closed connection.
    const on = computeBill({ ...profile, offlineMonitorMinutes: 10 }, connects, prices);
    const jobs = 1000 * 12 * (365 / 12);
    expect(((line(on, 'Lambda requests') - line(off, 'Lambda requests')) * 1e6) / 0.2).toBeCloseTo(jobs, 0);
    // Each job's invocation: the platform's 500 bytes.
    expect(
      ((line(on, 'CloudWatch Logs ingestion') - line(off, 'CloudWatch Logs ingestion')) / 0.5) * 1024 ** 3,
    ).toBeCloseTo(jobs * 500, -3);
  });

  it("bills a batched worker run's measured log once a run of the batch the fleet fills", () => {
    // A worker run writes a 500-byte line; the messages themselves nothing.
    const batched = {
      ...batchedHeartbeat,
      functionLogBytes: 0,
      functionLogLines: 0,
      batchLogBytes: 500,
      batchLogLines: 1,
      accessLogBytes: 0,
      accessLogLines: 0,
    };
    const queued: MeasuredOperations = { ...measured, operations: { 'heartbeat.websocket': batched } };
    const profile = {
      ...onlyHeartbeats,
      heartbeatTransport: 'websocket' as const,
      heartbeatSeconds: 900,
      platformLogBytes: 0,
    };
    const bytesPerHeartbeat = (devices: number) => {
      const bill = computeBill({ ...profile, devices }, queued, prices);
      const usd = bill.lines.find((each) => each.label === 'CloudWatch Logs ingestion')!.usd;
      return {
        bytes: ((usd / 0.5) * 1024 ** 3) / (devices * 96 * (365 / 12)),
        batch: bill.batches['heartbeat.websocket']!,
      };
    };
    // 100 devices: a run for each heartbeat; 10,000: a run for each 55.6.
    expect(bytesPerHeartbeat(100)).toEqual({ bytes: expect.closeTo(526, 3), batch: 1 });
    const large = bytesPerHeartbeat(10_000);
    expect(large.bytes).toBeCloseTo(526 / large.batch, 3);
  });

  it("bills heartbeats on the connection by the heartbeat queue's batches: the database once a batch the fleet fills", () => {
    const batched = batchedHeartbeat;
    const queued: MeasuredOperations = { ...measured, operations: { 'heartbeat.websocket': batched } };
    const profile = { ...onlyHeartbeats, heartbeatTransport: 'websocket' as const, heartbeatSeconds: 900 };
    const heartbeats = (devices: number) => devices * 96 * (365 / 12);
    const bill = (devices: number) => computeBill({ ...profile, devices }, queued, prices);
    // 10,000 devices send 55.6 heartbeats in the 5 s window: a batch each, its 2 calls shared.
    expect(bill(10_000).batches['heartbeat.websocket']).toBeCloseTo((10_000 * 96 * 5) / 86_400, 6);
    expect(cents(bill(10_000))['RDS Data API requests']).toBe(
      (((heartbeats(10_000) / ((10_000 * 96 * 5) / 86_400)) * 2 * 0.35) / 1e6).toFixed(2),
    );
    // 100,000 devices fill the batch of 100 before the window ends.
    expect(bill(100_000).batches['heartbeat.websocket']).toBe(100);
    // 100 devices send fewer than one in a window: every heartbeat is a batch of its own, 2 calls.
    expect(bill(100).batches['heartbeat.websocket']).toBe(1);
    expect(cents(bill(100))['RDS Data API requests']).toBe(((heartbeats(100) * 2 * 0.35) / 1e6).toFixed(2));
    // Each heartbeat is sent to the queue; each batch received once and deleted 10 at a time.
    expect(cents(bill(100))['SQS requests']).toBe(((heartbeats(100) * 3 * 0.4) / 1e6).toFixed(2));
  });

  it('refuses to bill an operation it has no figures for', () => {
    expect(() => computeBill({ ...onlyHeartbeats, postureUploadsPerDay: 1 }, measured, prices)).toThrow(
      'tools/cost/operations.json has no figures for posture.upload: run npm run bench:cost',
    );
  });
});

describe('npm run cost', () => {
  const cli = useCli('tools/cost.ts');
  const dir = mkdtempSync(join(tmpdir(), 'logbook-cost-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, cli.args(args), { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => {
        stdout += chunk;
      });
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      child.once('error', reject);
      child.once('close', (status) => resolve({ status, stdout, stderr }));
    });

  it('prints one line per cost line and the total, per month and per device, last', async () => {
    const { status, stdout } = await run(['--devices', '1000']);
    expect(status).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(/^total \d+\.\d{2} USD\/month, \d+\.\d{3} USD\/device$/);
    expect(lines.filter((line) => / USD$/.test(line))).toHaveLength(20);
    for (const cost of ['API Gateway HTTP API requests', 'Aurora Serverless v2 capacity', 'X-Ray traces'])
      expect(stdout).toContain(cost);
  });

  it('lists every flag with its default on --help', async () => {
    const { status, stdout } = await run(['--help']);
    expect(status).toBe(0);
    expect(stdout).toContain('--heartbeat-transport http|websocket (default websocket)');
    expect(stdout).toContain('--secret-reads-per-data-api-call <number> (default 1)');
  });

  it('reads the figures of another measurement with --operations', async () => {
    const file = join(dir, 'operations.json');
    writeFileSync(file, JSON.stringify(measured));
    const { status, stdout } = await run([
      '--devices',
      '1000',
      '--operations',
      file,
      ...[
        '--heartbeat-transport',
        'http',
        '--heartbeat-seconds',
        '60',
        '--ping-seconds',
        '0',
        '--ws-connects-per-day',
        '0',
        '--log-entries-per-day',
        '0',
      ],
      ...['--event-log-entries-per-day', '0', '--posture-uploads-per-day', '0', '--metrics-uploads-per-day', '0'],
      ...['--tracing', 'all', '--lambda-memory-mb', '1024', '--lambda-slowdown', '1', '--platform-log-bytes', '500'],
      ...['--app-log-bytes', '0', '--secrets', '4', '--alarms', '10', '--custom-metrics', '10', '--schedules', '0'],
      ...['--base-storage-gb', '0', '--access-log-bytes', '500'],
    ]);
    expect(status).toBe(0);
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('total 845.52 USD/month, 0.846 USD/device');
  });

  it.each([
    [[], '--devices <n> is required'],
    [['--devices', '0'], '--devices takes a whole number of 1 or more, not 0'],
    [
      ['--devices', '100', '--heartbeat-transport', 'pigeon'],
      '--heartbeat-transport takes http or websocket, not pigeon',
    ],
    [['--devices', '100', '--heartbeat-seconds', 'soon'], '--heartbeat-seconds takes a number of 0 or more, not soon'],
    [['--devices', '100', '--heartbeats', '60'], "Unknown option '--heartbeats'"],
  ])('refuses %j with a clear error and exit status 1', async (args, message) => {
    const { status, stdout, stderr } = await run(args);
    expect(status).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(message);
    expect(stderr).toContain('usage: npm run cost -- --devices <n>');
  });
});
