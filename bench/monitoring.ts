import { parseArgs } from 'node:util';
import type { AuditContext } from '#shared/audit/writer.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { backtest } from '#shared/monitoring/backtest.ts';
import { uploadMetrics } from '#shared/monitoring/evaluate.ts';
import { effectivePoliciesOf } from '#shared/policies/effective.ts';
import { benchReport, loadAverage, ms, number, positive, ratio, status, verdict } from './support/format.ts';
import { insertBenchOrganizations } from './support/organizations.ts';
import { partnerAdmin } from './support/principals.ts';
import { createScratchDatabase } from './support/scratch-database.ts';
import { serverSettings } from './support/server-settings.ts';
import { latency, percentiles, timed } from './support/timing.ts';

const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '10000' },
    items: { type: 'string', default: '10' },
    assignments: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '30' },
    workers: { type: 'string', default: '16' },
    'backtest-devices': { type: 'string', default: '1000' },
    'backtest-days': { type: 'string', default: '30' },
    'backtest-minutes': { type: 'string', default: '15' },
    samples: { type: 'string', default: '200' },
  },
  strict: true,
});
const deviceCount = positive('devices', args.devices);
const itemCount = positive('items', args.items);
const assignmentCount = positive('assignments', args.assignments);
const seconds = positive('seconds', args.seconds);
const workers = positive('workers', args.workers);
const backtestDevices = positive('backtest-devices', args['backtest-devices']);
const backtestDays = positive('backtest-days', args['backtest-days']);
const backtestMinutes = positive('backtest-minutes', args['backtest-minutes']);
const samples = positive('samples', args.samples);

const targets = { uploadsPerSecond: 170, uploadP95Ms: 50, resolveP95Ms: 10, backtestS: 5 };
const orgCount = 20;

const metrics = ['cpu.percent', 'memory.percent', 'disk.freePercent'] as const;
/** Metric items over the three metrics, thresholds that rarely fire (the common case: most uploads move nothing). */
const items = Array.from({ length: itemCount }, (_, i) => {
  const metric = metrics[i % metrics.length]!;
  const low = metric === 'disk.freePercent';
  return {
    key: `m${i}`,
    type: 'metric',
    severity: 'medium',
    autoResolve: true,
    metric,
    ...(low ? { volume: 'C:' } : {}),
    op: low ? 'lt' : 'gt',
    threshold: low ? 5 + i : 90 + (i % 5),
    clearThreshold: low ? 10 + i : 80,
    windowSeconds: 300,
    aggregation: (['avg', 'max', 'min', 'last'] as const)[i % 4],
    pendingSeconds: 120,
  };
});

async function loadFleet(admin: Db, partnerId: string, orgIds: string[]) {
  await admin.query(
    `INSERT INTO devices (org_id, site_id, hostname, os_type, role, last_seen_at)
     SELECT o.id, s.id, 'dev-' || lpad(i::text, 6, '0'), 'windows', CASE WHEN i % 5 = 0 THEN 'server' ELSE 'workstation' END, now()
       FROM generate_series(1, :count::int) AS i
       JOIN LATERAL (SELECT id FROM organizations WHERE id = (:orgIds::jsonb ->> (i % :orgs::int))::uuid) o ON true
       JOIN LATERAL (SELECT id FROM sites WHERE org_id = o.id LIMIT 1) s ON true`,
    { count: deviceCount, orgIds, orgs: orgIds.length },
  );
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO policies (partner_id, kind, name, items) VALUES (:partnerId::uuid, 'monitoring', 'Baseline', :items::jsonb)
     RETURNING id`,
    { partnerId, items },
  );
  const policyId = rows[0]!.id;
  await admin.query(
    `INSERT INTO policy_versions (policy_id, version, name, items) SELECT id, 1, name, items FROM policies WHERE id = :id::uuid`,
    { id: policyId },
  );
  await admin.query(
    `INSERT INTO policy_assignments (policy_id, partner_id, org_id, kind, level, target_id)
     VALUES (:policyId::uuid, :partnerId::uuid, NULL, 'monitoring', 'partner', :partnerId::uuid)`,
    { policyId, partnerId },
  );
  // The rest of the partner's assignments: other policies of one item each, at organizations, sites, groups and
  // devices, as an MSP's overrides pile up.
  await admin.query(
    `WITH p AS (
       INSERT INTO policies (partner_id, kind, name, items)
       SELECT :partnerId::uuid, 'monitoring', 'Override ' || i, jsonb_build_array(:items::jsonb -> (i % :itemCount::int))
         FROM generate_series(1, :n::int) AS i
       RETURNING id, split_part(name, ' ', 2)::int AS i),
     d AS (SELECT id, org_id, site_id, row_number() OVER (ORDER BY id) AS i FROM devices)
     INSERT INTO policy_assignments (policy_id, partner_id, org_id, kind, level, target_id, priority)
     SELECT p.id, :partnerId::uuid, d.org_id, 'monitoring',
            CASE p.i % 3 WHEN 0 THEN 'device' WHEN 1 THEN 'site' ELSE 'organization' END,
            CASE p.i % 3 WHEN 0 THEN d.id WHEN 1 THEN d.site_id ELSE d.org_id END, 100 + p.i::int
       FROM p JOIN d ON d.i = p.i * 7
     ON CONFLICT DO NOTHING`,
    { partnerId, items, itemCount, n: assignmentCount - 1 },
  );
  return policyId;
}

async function main() {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const scratch = await createScratchDatabase('monitoring');
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  const db = createPgDb({ connectionString: scratch.url, max: 20, applicationName: 'logbook-bench-monitoring' });
  try {
    const server = await serverSettings(admin, scratch.server);
    const { partnerId, orgIds } = await insertBenchOrganizations(admin, orgCount);
    status(`loading ${number(deviceCount)} devices and ${assignmentCount} assignments ...`);
    const policyId = await loadFleet(admin, partnerId, orgIds);
    await admin.query('VACUUM ANALYZE');
    const { rows: assigned } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM policy_assignments');
    const { rows: fleet } = await admin.query<{ id: string; orgId: string }>(
      'SELECT id, org_id AS "orgId" FROM devices ORDER BY hostname',
    );
    const lines: string[][] = [];

    // Resolution.
    status('effective-policy resolution ...');
    let next = 0;
    const pick = () => fleet[next++ % fleet.length]!;
    const resolved = await latency(() => {
      const d = pick();
      return effectivePoliciesOf(db, d.id, 'monitoring');
    }, samples);
    const bareRow = await latency(
      () => db.query('SELECT * FROM devices WHERE id = :id::uuid', { id: pick().id }),
      samples,
    );
    const example = await effectivePoliciesOf(db, fleet[6]!.id, 'monitoring');
    lines.push(
      [
        `Effective-policy resolution of one device, ${number(assigned[0]!.n)} assignments in the partner (p50 / p95 of ${samples})`,
      ],
      [
        `  one device (${example!.effective.items.length} effective items)`,
        `${ms(resolved.p50)} / ${ms(resolved.p95)}`,
        `${ms(bareRow.p95)} bare device read`,
        ratio(resolved.p95 / bareRow.p95),
        `p95 < ${targets.resolveP95Ms} ms`,
        verdict(resolved.p95 < targets.resolveP95Ms),
      ],
    );

    // Uploads: each worker is an agent after another, each upload one minute of samples of one device.
    status(`metric uploads by ${workers} agents at once for ${seconds} s ...`);
    const audit = (): AuditContext => ({ db, pending: [] });
    const sampleOf = (minute: number) => {
      const timestamp = new Date(Date.now() - 3_600_000 + minute * 60_000).toISOString();
      return [
        { metric: 'cpu.percent' as const, value: 20 + (minute % 7), timestamp },
        { metric: 'memory.percent' as const, value: 50 + (minute % 5), timestamp },
        { metric: 'disk.freePercent' as const, volume: 'C:', value: 40, timestamp },
      ];
    };
    const run = async (upload: (d: { id: string; orgId: string }, minute: number) => Promise<unknown>) => {
      const times: number[] = [];
      const deadline = performance.now() + seconds * 1000;
      let cursor = 0;
      let failures = 0;
      await Promise.all(
        Array.from({ length: workers }, async () => {
          while (performance.now() < deadline) {
            const n = cursor++;
            const d = fleet[n % fleet.length]!;
            const t0 = performance.now();
            try {
              await upload(d, Math.floor(n / fleet.length));
            } catch (error) {
              failures += 1;
              if (failures <= 3) status(`upload failed: ${String(error)}`);
            }
            times.push(performance.now() - t0);
          }
        }),
      );
      return { count: times.length, perSecond: times.length / seconds, ...percentiles(times), failures };
    };
    const evaluated = await run(async (d, minute) => {
      const context = audit();
      await uploadMetrics(
        db,
        { actorType: 'agent', agentId: d.id, deviceId: d.id, orgId: d.orgId },
        d.id,
        { samples: sampleOf(minute) },
        context,
      );
      await Promise.all(context.pending);
    });
    // The target's load: uploads arriving at the target rate, each timed from its arrival (an open loop).
    status(`metric uploads arriving at ${targets.uploadsPerSecond}/s for ${seconds} s ...`);
    const paced = await (async () => {
      const times: number[] = [];
      let failures = 0;
      const inFlight: Promise<void>[] = [];
      const startedAt = performance.now();
      const total = targets.uploadsPerSecond * seconds;
      for (let n = 0; n < total; n++) {
        const due = startedAt + (n * 1000) / targets.uploadsPerSecond;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const d = fleet[(n + fleet.length / 2) % fleet.length]!;
        const arrived = performance.now();
        const context = audit();
        inFlight.push(
          uploadMetrics(
            db,
            { actorType: 'agent', agentId: d.id, deviceId: d.id, orgId: d.orgId },
            d.id,
            { samples: sampleOf(Math.floor(n / fleet.length) + 500) },
            context,
          )
            .then(() => Promise.all(context.pending))
            .then(
              () => void times.push(performance.now() - arrived),
              () => void failures++,
            ),
        );
      }
      await Promise.all(inFlight);
      return { ...percentiles(times), failures, perSecond: times.length / ((performance.now() - startedAt) / 1000) };
    })();
    const bare = await run((d, minute) =>
      db.query(
        `INSERT INTO device_metric_samples (device_id, metric, volume, at, org_id, value)
         SELECT :deviceId::uuid, s.metric, coalesce(s.volume, ''), s.timestamp, :orgId::uuid, s.value
           FROM jsonb_to_recordset(:samples::jsonb) AS s(metric text, volume text, timestamp timestamptz, value float8)
         ON CONFLICT DO NOTHING`,
        { deviceId: d.id, orgId: d.orgId, samples: sampleOf(minute + 1_000_000) },
      ),
    );
    lines.push(
      [''],
      [
        `Metric uploads, ${number(deviceCount)} devices with ${itemCount} metric items each, ${workers} agents at once for ${seconds} s (3 samples each)`,
      ],
      [
        '  uploads per second, with evaluation',
        `${number(evaluated.perSecond)}/s (${evaluated.failures} failed)`,
        `${number(bare.perSecond)}/s bare sample insert`,
        ratio(evaluated.perSecond / bare.perSecond),
        `>= ${targets.uploadsPerSecond}/s`,
        verdict(evaluated.perSecond >= targets.uploadsPerSecond && evaluated.failures === 0),
      ],
      [
        '  one upload at full speed, p50 / p95',
        `${ms(evaluated.p50)} / ${ms(evaluated.p95)}`,
        `${ms(bare.p95)} bare insert p95`,
        ratio(evaluated.p95 / bare.p95),
        '',
        '',
      ],
      [
        `  one upload arriving at ${targets.uploadsPerSecond}/s, p50 / p95`,
        `${ms(paced.p50)} / ${ms(paced.p95)} (${paced.failures} failed)`,
        `${ms(bare.p95)} bare insert p95`,
        ratio(paced.p95 / bare.p95),
        `p95 < ${targets.uploadP95Ms} ms`,
        verdict(paced.p95 < targets.uploadP95Ms && paced.failures === 0),
      ],
    );

    // Backtest.
    const perDevice = Math.floor((backtestDays * 24 * 60) / backtestMinutes);
    status(`loading ${number(backtestDevices * perDevice)} samples for the backtest ...`);
    const to = new Date(Date.now() - 86_400_000);
    const from = new Date(to.getTime() - backtestDays * 86_400_000);
    const backtestFleet = fleet.slice(0, backtestDevices);
    await admin.query(
      `INSERT INTO device_metric_samples (device_id, metric, volume, at, org_id, value)
       SELECT d.id, 'cpu.percent', '', :from::timestamptz + k * :minutes::int * interval '1 minute', d.org_id,
              CASE WHEN (k + abs(hashtext(d.id::text))) % 500 < 12 THEN 97 ELSE 30 + k % 20 END
         FROM devices d JOIN (SELECT jsonb_array_elements_text(:ids::jsonb)::uuid AS id) f ON f.id = d.id
         CROSS JOIN generate_series(1, :perDevice::int) AS k
       ON CONFLICT DO NOTHING`,
      { from, minutes: backtestMinutes, perDevice, ids: backtestFleet.map((d) => d.id) },
    );
    await admin.query('VACUUM ANALYZE device_metric_samples');
    const principal = partnerAdmin(partnerId);
    const replay = await timed(() =>
      backtest(db, principal, policyId, 'm0', { from: from.toISOString(), to: to.toISOString(), orgId: undefined }),
    );
    const count = await timed(() =>
      db.query(
        `SELECT count(*) FROM device_metric_samples WHERE metric = 'cpu.percent' AND at > :from::timestamptz AND at <= :to::timestamptz`,
        { from, to },
      ),
    );
    lines.push(
      [''],
      [
        `Backtest of one item over ${backtestDays} days of samples every ${backtestMinutes} min (${number(backtestDevices * perDevice)} samples on ${number(backtestDevices)} devices; ${number(deviceCount)} devices resolved)`,
      ],
      [
        `  backtest (${replay.value.totals.fired} firings)`,
        ms(replay.ms),
        `${ms(count.ms)} bare count of the samples`,
        ratio(replay.ms / count.ms),
        `< ${targets.backtestS} s`,
        verdict(replay.ms < targets.backtestS * 1000),
      ],
    );

    console.log(benchReport({ name: 'monitoring', server, loadAtStart, started, lines }));
  } finally {
    await db.close();
    await admin.close();
    await scratch.drop();
  }
}

await main();
