/**
 * `npm run bench:notifications [-- --schedules 10000 --days 90 --alerts 10000 --devices 1000 --channels 50]`: the
 * schedule engine and the notification figures, each beside a baseline measured in the same run:
 *
 * - the occurrences of --schedules schedules (a mix of weekly, monthly "second Tuesday", "last Friday", daily and
 *   the 31st, across zones with and without DST) over the next --days days; baseline: the same rules expanded by the
 *   library alone in UTC, without placing local times in their zones;
 * - an alert storm: --alerts alerts raised as fast as the domain takes them across --devices devices in --channels
 *   organizations, each organization's defaults naming its own Slack-format channel on a local receiver, throttled to
 *   150 a minute: time until every notification is delivered or carried by a delivered digest, duplicates per
 *   (alert, channel, event, step), what the receiver got; baseline: the same number of alerts raised where no channel
 *   is named;
 * - the statements an alert costs (raising it, its notification and automation jobs, its delivery): the storm's
 *   statements until everything is delivered, per alert; baseline: the same where no channel is named;
 * - statements reaching the database for 10 s once the storm is over and nothing is due (every statement would
 *   resume a paused Aurora); baseline: the statements of the storm.
 *
 * Everything runs in this process (the work queue runs its jobs here), on a scratch database dropped afterwards.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { RRuleTemporal } from 'rrule-temporal';
import { runJob } from '#functions/queue/jobs.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { raiseScriptAlert } from '#shared/alerts/raise.ts';
import { appDb, appStatementCount, closeAppDb } from '#shared/db/client.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { localJobsSettled, runJobsLocally } from '#shared/queue/work-queue.ts';
import { compileSchedule, occurrencesBetween } from '#shared/schedules/engine.ts';
import { number, positive, status, verdict } from './support/format.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { pool } from './support/timing.ts';

// `npm run bench` passes its arguments to every benchmark: options of the others are ignored here.
const { values: args } = parseArgs({
  options: {
    schedules: { type: 'string', default: '10000' },
    days: { type: 'string', default: '90' },
    alerts: { type: 'string', default: '10000' },
    devices: { type: 'string', default: '1000' },
    channels: { type: 'string', default: '50' },
  },
  strict: false,
});
const scheduleCount = positive('schedules', args.schedules);
const days = positive('days', args.days);
const alertCount = positive('alerts', args.alerts);
const deviceCount = positive('devices', args.devices);
const channelCount = positive('channels', args.channels);
const targets = { occurrencesMs: 2000, stormMs: 120_000 };
const seconds = (n: number) => `${(n / 1000).toFixed(1)} s`;

const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham', 'UTC'];
const rules = [
  'FREQ=WEEKLY;BYDAY=SU',
  'FREQ=MONTHLY;BYDAY=2TU',
  'FREQ=MONTHLY;BYDAY=-1FR',
  'FREQ=DAILY',
  'FREQ=MONTHLY;BYMONTHDAY=31',
];

function occurrencesFigure() {
  const schedules = Array.from({ length: scheduleCount }, (_, i) => ({
    rrule: rules[i % rules.length]!,
    start: `2026-0${1 + (i % 9)}-0${1 + (i % 9)}T0${i % 10}:${String(i % 60).padStart(2, '0')}:00`,
    timezone: zones[i % zones.length]!,
  }));
  const from = new Date();
  const to = new Date(from.getTime() + days * 86_400_000);
  let started = performance.now();
  let engineCount = 0;
  for (const schedule of schedules)
    engineCount += occurrencesBetween(compileSchedule(schedule), from, to, 10_000).length;
  const engineMs = performance.now() - started;
  started = performance.now();
  let libraryCount = 0;
  for (const schedule of schedules) {
    const rule = new RRuleTemporal({
      rruleString: `DTSTART:${schedule.start.replace(/[-:]/g, '')}Z\nRRULE:${schedule.rrule}`,
    });
    libraryCount += rule.between(from, to, true).length;
  }
  return { engineMs, engineCount, libraryMs: performance.now() - started, libraryCount };
}

/** A Slack-format receiver on loopback: counts what it got, 200 to everything. */
async function startReceiver() {
  let received = 0;
  let digests = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (part: Buffer) => {
      body += part.toString();
    });
    req.on('end', () => {
      received++;
      if (body.includes('held back by the throttle')) digests++;
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack`,
    counts: () => ({ received, digests }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main() {
  status('occurrences of the schedules …');
  const occurrences = occurrencesFigure();
  const scratch = await createScratchDatabase('notifications');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  const receiver = await startReceiver();
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    process.env.APP_DATABASE_URL = roleUrls(scratch.url).app;
    process.env.ENROLLMENT_KEY_SEAL_KEY ??= randomBytes(32).toString('base64');
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    process.env.LOG_LEVEL ??= 'WARN';
    runJobsLocally(runJob);
    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = async (name: string) =>
      admin.transaction((tx) => insertOrganizationWithSite(tx, { partnerId: partner.id, name }, { name: 'HQ' }));
    const devicesOf = async (o: { id: string; site: { id: string } }, count: number) => {
      const { rows } = await admin.query<{ id: string }>(
        `INSERT INTO devices (org_id, site_id, hostname)
         SELECT :orgId::uuid, :siteId::uuid, 'host-' || n FROM generate_series(1, :count::int) n RETURNING id`,
        { orgId: o.id, siteId: o.site.id, count },
      );
      return rows.map((row) => ({ orgId: o.id, deviceId: row.id }));
    };
    const raiseAll = async (devices: { orgId: string; deviceId: string }[]) => {
      const work = Array.from({ length: alertCount }, (_, i) => devices[i % devices.length]!);
      const started = performance.now();
      await pool(work, 16, async (device) => {
        await raiseScriptAlert(
          appDb(),
          {
            runItemId: randomUUID(),
            runId: randomUUID(),
            orgId: device.orgId,
            partnerId: partner.id,
            deviceId: device.deviceId,
            hostname: 'bench-host',
            scriptId: randomUUID(),
            scriptName: 'Disk check',
            scriptVersion: 1,
            exitCode: 2,
          },
          'high',
        );
      });
      return performance.now() - started;
    };

    status(`baseline: ${number(alertCount)} alerts told nobody …`);
    const quiet = await org('Quiet Corp');
    const quietDevices = await devicesOf(quiet, deviceCount);
    const baselineBefore = appStatementCount();
    const baselineMs = await raiseAll(quietDevices);
    // Their notification and automation jobs finish before the storm starts: the storm's statements are its own.
    await localJobsSettled();
    const baselineStatements = appStatementCount() - baselineBefore;

    status(`storm: ${number(alertCount)} alerts to ${channelCount} channels …`);
    const devices: { orgId: string; deviceId: string }[] = [];
    for (let c = 0; c < channelCount; c++) {
      const o = await org(`Storm ${c}`);
      devices.push(...(await devicesOf(o, Math.ceil(deviceCount / channelCount))));
      const { rows } = await admin.query<{ id: string }>(
        `INSERT INTO notification_channels (partner_id, org_id, name, type, config, throttle_max, throttle_window_minutes)
         VALUES (:partnerId::uuid, :orgId::uuid, 'NOC', 'slack', :config::jsonb, 150, 1) RETURNING id`,
        { partnerId: partner.id, orgId: o.id, config: { url: receiver.url } },
      );
      await admin.query(
        `INSERT INTO notification_defaults (partner_id, org_id, channels) VALUES (:partnerId::uuid, :orgId::uuid, :channels::jsonb)`,
        { partnerId: partner.id, orgId: o.id, channels: { high: [rows[0]!.id] } },
      );
    }
    const statementsBefore = appStatementCount();
    const stormStarted = performance.now();
    const raiseMs = await raiseAll(devices);
    const settled = async () => {
      const { rows } = await admin.query<{ open: number; total: number }>(
        `SELECT count(*) FILTER (WHERE NOT (status = 'delivered' OR (status = 'digested' AND EXISTS (
                   SELECT 1 FROM notifications d WHERE d.id = n.digest_id AND d.status = 'delivered'))))::int AS open,
                count(*) FILTER (WHERE n.alert_id IS NOT NULL)::int AS total
           FROM notifications n`,
      );
      return rows[0]!;
    };
    let state = await settled();
    while (state.total < alertCount || state.open > 0) {
      if (performance.now() - stormStarted > 10 * 60_000) break;
      status(`storm: ${number(state.total)} notifications, ${number(state.open)} not delivered yet`, true);
      await new Promise((resolve) => setTimeout(resolve, 500));
      state = await settled();
    }
    const stormMs = performance.now() - stormStarted;
    const stormStatements = appStatementCount() - statementsBefore;
    const { rows: duplicates } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM notifications WHERE alert_id IS NOT NULL
         GROUP BY alert_id, channel_id, event, step HAVING count(*) > 1) d`,
    );
    const { rows: byStatus } = await admin.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM notifications GROUP BY status ORDER BY status`,
    );

    status('idle for 10 s …');
    const idleBefore = appStatementCount();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const idleStatements = appStatementCount() - idleBefore;
    const { received, digests } = receiver.counts();

    console.log(`
Schedules and notifications, ${new Date().toISOString()}; ${availableParallelism()} cores, load ${loadavg()[0]!.toFixed(1)}; ${scratch.server}

${formatTable(
  ['figure', 'measured', 'baseline', 'target', ''],
  [
    [
      `occurrences of ${number(scheduleCount)} schedules, next ${days} days`,
      `${Math.round(occurrences.engineMs)} ms (${number(occurrences.engineCount)})`,
      `${Math.round(occurrences.libraryMs)} ms (${number(occurrences.libraryCount)}, library alone in UTC)`,
      `< ${targets.occurrencesMs} ms`,
      verdict(occurrences.engineMs < targets.occurrencesMs),
    ],
    [
      `raising ${number(alertCount)} alerts (${deviceCount} devices)`,
      seconds(raiseMs),
      `${seconds(baselineMs)} (no channel named)`,
      '< 60 s',
      verdict(raiseMs < 60_000),
    ],
    [
      'statements an alert (raised, told, delivered)',
      (stormStatements / alertCount).toFixed(1),
      `${(baselineStatements / alertCount).toFixed(1)} (no channel named)`,
      '',
      '',
    ],
    [
      `storm delivered or digested (${channelCount} channels, 150/min each)`,
      seconds(stormMs),
      '',
      `< ${seconds(targets.stormMs)}`,
      verdict(stormMs < targets.stormMs && state.open === 0),
    ],
    [
      'duplicates per (alert, channel, event, step)',
      String(duplicates[0]!.n),
      '',
      '0',
      verdict(duplicates[0]!.n === 0),
    ],
    ['notifications by status', byStatus.map((s) => `${s.status} ${number(s.n)}`).join(', '), '', '', ''],
    ['messages the receiver got (of them digests)', `${number(received)} (${number(digests)})`, '', '', ''],
    [
      'statements in 10 s once nothing is due',
      String(idleStatements),
      `${number(stormStatements)} during the storm`,
      '0',
      verdict(idleStatements === 0),
    ],
  ],
)}`);
  } finally {
    await receiver.close();
    await closeAppDb();
    await admin.close();
    await scratch.drop();
  }
}

await main();
