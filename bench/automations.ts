/**
 * `npm run bench:automations [-- --automations 1000 --devices 10000 --zones 5 --online 1000]`: the automation
 * figures, each beside a baseline measured in the same run:
 *
 * - --automations automations with the same device-local schedule ("every day 03:00", run-script) across --devices
 *   devices in --zones time zones: each zone's occurrence job of each automation delivered at its occurrence, twice;
 *   time from the occurrence until the last run's script run is dispatched, runs per (automation, occurrence, zone),
 *   duplicates; baseline: the same script runs started directly (one per automation and zone), without automations;
 * - --online devices coming online at once (device.online told for each, received in the queue worker's batches) with
 *   one automation triggered by it: time until every device's run is recorded; baseline: the same events with no
 *   automation listening;
 * - statements reaching the database for 10 s once nothing is due and no agent is connected.
 *
 * Everything runs in this process (the work queue runs its jobs here), on a scratch database dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Temporal } from 'temporal-polyfill';
import { runDeviceEventJobs, runJob } from '#functions/queue/jobs.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { runOccurrence } from '#shared/automations/schedule.ts';
import { defaultGuards } from '#shared/automations/schemas.ts';
import { insertAutomation } from '#shared/automations/store.ts';
import { appDb, appStatementCount, closeAppDb } from '#shared/db/client.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { deviceEventKind } from '#shared/queue/device-events.ts';
import { type Job, runJobsLocally } from '#shared/queue/work-queue.ts';
import { insertRun as insertScriptRun } from '#shared/scripts/store.ts';
import { number, positive, status, verdict } from './support/format.ts';
import { insertBenchOrganizations } from './support/organizations.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { formatTable } from './support/table.ts';
import { pool } from './support/timing.ts';

// `npm run bench` passes its arguments to every benchmark: options of the others are ignored here.
const { values: args } = parseArgs({
  options: {
    automations: { type: 'string', default: '1000' },
    devices: { type: 'string', default: '10000' },
    zones: { type: 'string', default: '5' },
    online: { type: 'string', default: '1000' },
  },
  strict: false,
});
const automationCount = positive('automations', args.automations);
const deviceCount = positive('devices', args.devices);
const zoneCount = Math.min(positive('zones', args.zones), 8);
const onlineCount = Math.min(positive('online', args.online), deviceCount);
const seconds = (n: number) => `${(n / 1000).toFixed(1)} s`;
const allZones = [
  'Europe/Berlin',
  'America/New_York',
  'Asia/Kolkata',
  'Australia/Sydney',
  'UTC',
  'America/Los_Angeles',
  'Asia/Tokyo',
  'Pacific/Chatham',
];
const zones = allZones.slice(0, zoneCount);
const actor = {
  actorType: 'user' as const,
  id: randomBytes(16).toString('hex'),
  email: null,
  name: 'Bench',
  role: 'org_admin',
};

async function main() {
  const scratch = await createScratchDatabase('automations');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    process.env.APP_DATABASE_URL = roleUrls(scratch.url).app;
    process.env.ENROLLMENT_KEY_SEAL_KEY ??= randomBytes(32).toString('base64');
    process.env.LOG_LEVEL ??= 'WARN';
    runJobsLocally(runJob);
    status(`${number(deviceCount)} devices in ${zoneCount} zones …`);
    const { partnerId, orgIds } = await insertBenchOrganizations(admin, 1);
    const orgId = orgIds[0]!;
    const devicesByZone = new Map<string, string[]>();
    for (const [z, zone] of zones.entries()) {
      const { rows: sites } = await admin.query<{ id: string }>(
        'INSERT INTO sites (org_id, name, timezone) VALUES (:orgId::uuid, :name::text, :zone::text) RETURNING id',
        { orgId, name: `Site ${zone}`, zone },
      );
      const { rows } = await admin.query<{ id: string }>(
        `INSERT INTO devices (org_id, site_id, hostname)
         SELECT :orgId::uuid, :siteId::uuid, 'host-' || :z::int || '-' || n
           FROM generate_series(1, :count::int) n RETURNING id`,
        { orgId, siteId: sites[0]!.id, z, count: Math.ceil(deviceCount / zoneCount) },
      );
      devicesByZone.set(
        zone,
        rows.map((row) => row.id),
      );
    }
    // The first site of the organization (UTC, no zone) holds no device.
    const { rows: scripts } = await admin.query<{ id: string }>(
      `INSERT INTO scripts (partner_id, name, language, os_types, run_as, timeout_seconds, content)
       VALUES (:partnerId::uuid, 'Nightly', 'powershell', '["windows"]', 'system', 300, 'Get-Date') RETURNING id`,
      { partnerId },
    );
    const scriptId = scripts[0]!.id;

    status(`baseline: ${number(automationCount * zoneCount)} script runs started directly …`);
    let started = performance.now();
    const direct = [...devicesByZone.values()].flatMap((ids) => Array.from({ length: automationCount }, () => ids));
    await pool(direct, 8, async (ids) => {
      await insertScriptRun(appDb(), {
        partnerId,
        scriptId,
        scriptVersion: 1,
        parameters: {},
        secrets: null,
        timeoutSeconds: 300,
        startedBy: { ...actor, role: 'org_admin' },
        devices: ids.map((deviceId) => ({ deviceId, orgId })),
        pendingHours: 24,
      });
    });
    const directMs = performance.now() - started;
    await admin.query('TRUNCATE script_run_items, script_runs CASCADE');

    status(`${number(automationCount)} automations, every day 03:00 in each device's local time …`);
    const automationIds: string[] = [];
    for (let i = 0; i < automationCount; i++)
      automationIds.push(
        (
          await insertAutomation(
            appDb(),
            { partnerId, orgId },
            {
              name: `Nightly ${i}`,
              enabled: true,
              triggers: [
                {
                  type: 'schedule',
                  schedule: {
                    rrule: 'FREQ=DAILY;BYHOUR=3',
                    start: '2026-01-01T03:00:00',
                    misfire: 'run-once-late',
                    graceMinutes: 60,
                  },
                },
              ],
              conditions: null,
              actions: [{ type: 'run-script', scriptId, parameters: {}, sealedParameters: {}, onFailure: 'stop' }],
              guards: defaultGuards,
            },
            actor,
          )
        ).id,
      );
    // Each zone's occurrence of 2026-12-01 03:00 local, delivered at its time (and once more: a duplicate delivery).
    const jobs = automationIds.flatMap((automationId) =>
      zones.map((zone) => {
        const at = Temporal.PlainDateTime.from('2026-12-01T03:00:00').toZonedDateTime(zone).epochMilliseconds;
        return { automationId, version: 1, trigger: 0, zone, key: '2026-12-01T03:00:00', at };
      }),
    );
    const outcomes: Record<string, number> = {};
    const statementsBefore = appStatementCount();
    started = performance.now();
    let slowest = 0;
    await pool([...jobs, ...jobs], 8, async (job) => {
      // The job runs as if delivered the moment its occurrence came.
      const offset = performance.now() - started;
      const outcome = await runOccurrence(appDb(), job, new Date(job.at + offset));
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (outcome === 'ran') slowest = Math.max(slowest, performance.now() - started);
    });
    const scheduleMs = performance.now() - started;
    const scheduleStatements = appStatementCount() - statementsBefore;
    const { rows: runCounts } = await admin.query<{
      runs: number;
      duplicates: number;
      items: number;
      dispatched: number;
    }>(
      `SELECT (SELECT count(*)::int FROM automation_runs) AS runs,
              (SELECT count(*)::int FROM (SELECT 1 FROM automation_runs GROUP BY automation_id, occurrence_key, org_id
                                           HAVING count(*) > 1) d) AS duplicates,
              (SELECT count(*)::int FROM automation_run_items) AS items,
              (SELECT count(*)::int FROM automation_run_scripts) AS dispatched`,
    );
    const counts = runCounts[0]!;

    status(`baseline: ${number(onlineCount)} devices online, no automation listening …`);
    const onlineDevices = [...devicesByZone.values()].flat().slice(0, onlineCount);
    // A device's run counts once its script run is dispatched (linked to its item).
    const eventRuns = async () =>
      Number(
        (
          await admin.query(
            `SELECT count(*) AS n FROM automation_runs r JOIN automation_run_items i ON i.run_id = r.id
               JOIN automation_run_scripts rs ON rs.run_item_id = i.id WHERE r.trigger ->> 'type' = 'event'`,
          )
        ).rows[0]!.n,
      );
    // Each device's event is a job of the work queue, received as the queue worker's functions receive them (batches
    // of 10, 5 functions at once: infra/aws/work-queue.ts), each batch's events evaluated together.
    const processed = async (tag: string) => {
      const t0 = performance.now();
      const batches: Job[][] = [];
      for (let i = 0; i < onlineDevices.length; i += 10)
        batches.push(
          onlineDevices.slice(i, i + 10).map((deviceId) => ({
            kind: deviceEventKind,
            event: 'device.online',
            eventId: `${tag}:${deviceId}`,
            deviceId,
          })),
        );
      await pool(batches, 5, (batch) => runDeviceEventJobs(batch));
      return performance.now() - t0;
    };
    const quietMs = await processed('quiet');

    status(`${number(onlineCount)} devices online, one automation on device.online …`);
    await insertAutomation(
      appDb(),
      { partnerId, orgId },
      {
        name: 'Came online',
        enabled: true,
        triggers: [{ type: 'event', event: 'device.online' }],
        conditions: null,
        actions: [{ type: 'run-script', scriptId, parameters: {}, sealedParameters: {}, onFailure: 'stop' }],
        guards: defaultGuards,
      },
      actor,
    );
    const onlineMs = await processed('online');
    const onlineRuns = await eventRuns();

    // The last runs' dispatches and outcomes are written after their links: wait until no statement comes for 1 s.
    for (let last = -1; last !== appStatementCount(); ) {
      last = appStatementCount();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    status('idle for 10 s …');
    const idleBefore = appStatementCount();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const idleStatements = appStatementCount() - idleBefore;

    console.log(`
Automations, ${new Date().toISOString()}; ${availableParallelism()} cores, load ${loadavg()[0]!.toFixed(1)}; ${scratch.server}

${formatTable(
  ['figure', 'measured', 'baseline', 'target', ''],
  [
    [
      `${number(automationCount)} automations × ${zoneCount} zones, ${number(deviceCount)} devices: last run dispatched after its occurrence`,
      `${seconds(slowest)} (${number(counts.runs)} runs, ${number(counts.dispatched)} script run items)`,
      `${seconds(directMs)} (the same script runs started directly)`,
      '< 60 s',
      verdict(slowest < 60_000),
    ],
    [
      'job outcomes (each occurrence delivered twice)',
      Object.entries(outcomes)
        .map(([k, n]) => `${k} ${number(n)}`)
        .join(', '),
      '',
      `ran ${number(jobs.length)}`,
      verdict(outcomes.ran === jobs.length),
    ],
    [
      'duplicate runs per (automation, occurrence, organization)',
      String(counts.duplicates),
      '',
      '0',
      verdict(counts.duplicates === 0),
    ],
    ['statements of the scheduled runs', number(scheduleStatements), '', '', ''],
    [
      `${number(onlineCount)} devices online at once: every run dispatched`,
      `${seconds(onlineMs)} (${number(onlineRuns)} runs)`,
      `${seconds(quietMs)} (no automation listening)`,
      '< 30 s',
      verdict(onlineMs < 30_000 && onlineRuns >= onlineCount),
    ],
    [
      'statements in 10 s once nothing is due, no agent connected',
      String(idleStatements),
      '',
      '0',
      verdict(idleStatements === 0),
    ],
  ],
)}
(all ${number(scheduleMs)} ms of the doubled occurrence jobs; ${number(counts.items)} run items)`);
  } finally {
    await closeAppDb();
    await admin.close();
    await scratch.drop();
  }
}

await main();
