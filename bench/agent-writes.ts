import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { appStatementCount } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { compileFilter } from '#shared/device-groups/filter.ts';
import { startAgentStack } from './support/agent-stack.ts';
import { number, positive, status } from './support/format.ts';
import { formatTable } from './support/table.ts';

const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '20' },
    fleet: { type: 'string', default: '10000' },
    submissions: { type: 'string', default: '200' },
  },
  strict: false,
});
const deviceCount = positive('devices', args.devices);
const rounds = positive('rounds', args.rounds);
const fleet = positive('fleet', args.fleet);
const submissions = positive('submissions', args.submissions);

const lastSeenIndex =
  'CREATE INDEX devices_org_last_seen_idx ON devices (org_id, last_seen_at) WHERE deleted_at IS NULL';

const walLsn = async (admin: Db) =>
  BigInt(
    (await admin.query<{ lsn: string }>("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS lsn")).rows[0]!.lsn,
  );

interface Beats {
  walBytes: number;
  statements: number;
}

/** WAL bytes and statements per heartbeat of `beat` over every device, after a warm-up round. */
async function perHeartbeat(admin: Db, beat: (i: number) => Promise<void>): Promise<Beats> {
  await admin.query('CHECKPOINT');
  for (let i = 0; i < deviceCount; i++) await beat(i);
  const walBefore = await walLsn(admin);
  const statementsBefore = appStatementCount();
  for (let r = 0; r < rounds; r++) for (let i = 0; i < deviceCount; i++) await beat(i);
  const beats = rounds * deviceCount;
  return {
    walBytes: Number((await walLsn(admin)) - walBefore) / beats,
    statements: (appStatementCount() - statementsBefore) / beats,
  };
}

/** The filter `lastSeenAt withinDays 7` as device groups compile it (narrowed by the indexed hour). */
const compiledWithin7Days = compileFilter({ field: 'lastSeenAt', op: 'withinDays', value: 7 }, (value) =>
  String(value),
);

/** The median time of a count of the fleet's organization's devices matching `condition`. */
async function lastSeenCount(admin: Db, orgId: string, condition: string): Promise<{ ms: number; devices: number }> {
  const times: number[] = [];
  let devices = 0;
  for (let i = 0; i < 15; i++) {
    const started = performance.now();
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM devices d
        WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL AND ${condition}`,
      { orgId },
    );
    times.push(performance.now() - started);
    devices = rows[0]!.n;
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)]!, devices };
}

/**
 * Bytes per agent.eventlogs.submit row (heap, TOAST and every index) in a fresh copy of audit_entries holding those rows
 * with `details` as given, GIN pending lists merged.
 */
async function rowBytes(admin: Db, details: string): Promise<number> {
  await admin.query('DROP TABLE IF EXISTS bench_audit_rows');
  await admin.query('CREATE TABLE bench_audit_rows (LIKE audit_entries INCLUDING INDEXES)');
  const size = async () =>
    Number(
      (await admin.query<{ bytes: string }>("SELECT pg_total_relation_size('bench_audit_rows')::text AS bytes"))
        .rows[0]!.bytes,
    );
  const empty = await size();
  // Each row ten times (new ids), so that page and index overheads are shared as in a real trail.
  const { rowCount } = await admin.query(
    `INSERT INTO bench_audit_rows (pos, id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type,
                                   resource_id, resource_name, details, ip_address, user_agent, result, error_message)
     SELECT pos * 10 + copy, gen_random_uuid(), org_id, timestamp, actor_type, actor_id, actor_email, action,
            resource_type, resource_id, resource_name, ${details}, ip_address, user_agent, result, error_message
       FROM audit_entries, generate_series(0, 9) copy WHERE action = 'agent.eventlogs.submit' ORDER BY pos, copy`,
  );
  await admin.query('VACUUM bench_audit_rows');
  const bytes = (await size()) - empty;
  await admin.query('DROP TABLE bench_audit_rows');
  return bytes / rowCount;
}

async function main() {
  const stack = await startAgentStack('agentwrites');
  const { admin, base } = stack;
  const key = stack.enrollmentKey;
  const sockets: WebSocket[] = [];
  try {
    status(`loading ${number(fleet)} devices of one organization ...`);
    await admin.query(
      `INSERT INTO devices (org_id, site_id, hostname, os_type, os_version, agent_version, agent_status, last_seen_at, last_ip)
       SELECT :orgId::uuid, s.id, 'FLEET-' || lpad(i::text, 6, '0'), 'windows', '10.0.22631', '2.4.1', 'online',
              now() - (i % 30) * interval '1 day', '10.0.' || (i % 250) || '.' || (i % 200)
         FROM generate_series(1, :fleet::int) i, (SELECT id FROM sites WHERE org_id = :orgId::uuid LIMIT 1) s`,
      { orgId: stack.orgId, fleet },
    );
    await admin.query('ANALYZE devices');

    status(`enrolling ${deviceCount} agents ...`);
    const agents: { agentId: string; token: string }[] = [];
    for (let i = 0; i < deviceCount; i++) {
      const reply = await fetch(`${base}/api/v1/agents/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enrollmentKey: key, hostname: `WIN-BENCH-${String(i).padStart(4, '0')}` }),
      });
      if (reply.status !== 201) throw new Error(`enroll: ${reply.status} ${await reply.text()}`);
      agents.push((await reply.json()) as { agentId: string; token: string });
    }
    const body = { agentVersion: '2.4.1', status: 'online', serialNumber: 'SN-0042-BENCH', role: 'workstation' };
    const httpBeat = async (i: number) => {
      const agent = agents[i]!;
      const reply = await fetch(`${base}/api/v1/agents/${agent.agentId}/heartbeat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (reply.status !== 200) throw new Error(`heartbeat: ${reply.status} ${await reply.text()}`);
      await reply.arrayBuffer();
    };
    // Every device's first heartbeat records its first address.
    for (let i = 0; i < deviceCount; i++) await httpBeat(i);

    status('opening the agents’ WebSocket connections ...');
    const acks: ((message: string) => void)[][] = [];
    for (const [i, agent] of agents.entries()) {
      const socket = new WebSocket(stack.wsUrl, { headers: { authorization: `Bearer ${agent.token}` } });
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      acks[i] = [];
      socket.on('message', (data) => acks[i]!.shift()?.(data.toString()));
      sockets.push(socket);
    }
    const wsBeat = (i: number) =>
      new Promise<void>((resolve, reject) => {
        acks[i]!.push((message) =>
          JSON.parse(message).type === 'heartbeat.ack' ? resolve() : reject(new Error(`heartbeat: ${message}`)),
        );
        sockets[i]!.send(JSON.stringify({ type: 'heartbeat', ...body }));
      });

    status(`heartbeats: ${rounds} rounds of ${deviceCount} devices, HTTP ...`);
    const overHttp = await perHeartbeat(admin, httpBeat);
    status('heartbeats on the WebSocket ...');
    const overWs = await perHeartbeat(admin, wsBeat);
    const countWithout = await lastSeenCount(admin, stack.orgId, compiledWithin7Days);
    status('heartbeats with last_seen_at indexed (the baseline) ...');
    await admin.query(lastSeenIndex);
    await admin.query('ANALYZE devices');
    const indexed = await perHeartbeat(admin, httpBeat);
    const countWith = await lastSeenCount(admin, stack.orgId, 'd.last_seen_at >= now() - make_interval(days => 7)');
    await admin.query('DROP INDEX devices_org_last_seen_idx');

    status(`${submissions} event-log submissions ...`);
    for (let s = 0; s < submissions; s++) {
      const agent = agents[s % deviceCount]!;
      const events = Array.from({ length: 20 }, (_, e) => ({
        timestamp: new Date(Date.now() - (s * 20 + e) * 60_000).toISOString(),
        level: (['info', 'warning', 'error', 'critical'] as const)[e % 4],
        category: 'system',
        source: 'Service Control Manager',
        eventId: `System:${s * 20 + e}`,
        message: 'The Windows Update service entered the running state.',
      }));
      const reply = await fetch(`${base}/api/v1/agents/${agent.agentId}/eventlogs`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      if (reply.status !== 200) throw new Error(`eventlogs: ${reply.status} ${await reply.text()}`);
      await reply.arrayBuffer();
    }
    // The rows as written, and the same rows with the details they carried before, each into a copy of audit_entries
    // with all its indexes: the same method for both, so the difference is the row's own.
    const written = await rowBytes(admin, 'details');
    const before = await rowBytes(
      admin,
      "jsonb_build_object('submitted', 20, 'inserted', 20, 'duplicates', 0, 'actor', details -> 'actor')",
    );
    const { rows: sample } = await admin.query<{ details: unknown }>(
      "SELECT details FROM audit_entries WHERE action = 'agent.eventlogs.submit' ORDER BY pos LIMIT 1",
    );
    status('');

    const bytes = (n: number) => `${number(n)} B`;
    console.log(`
Logbook agent-writes benchmark (${new Date().toISOString().slice(0, 16)}Z): ${deviceCount} agents x ${rounds} rounds, an organization of ${number(fleet)} devices; ${availableParallelism()} CPUs shared with other work (load ${loadavg()[0]!.toFixed(1)}).
${formatTable(
  ['what', 'measured', 'baseline (same run)'],
  [
    [
      'WAL per heartbeat, POST /agents/{id}/heartbeat',
      bytes(overHttp.walBytes),
      `${bytes(indexed.walBytes)} (last_seen_at indexed)`,
    ],
    ['WAL per heartbeat on the WebSocket', bytes(overWs.walBytes), ''],
    [
      'statements per heartbeat, HTTP / WebSocket',
      `${overHttp.statements.toFixed(2)} / ${overWs.statements.toFixed(2)}`,
      `${indexed.statements.toFixed(2)} (HTTP, indexed)`,
    ],
    [
      `lastSeenAt withinDays 7 count (${number(countWithout.devices)} of ${number(fleet)}), median`,
      `${countWithout.ms.toFixed(1)} ms`,
      `${countWith.ms.toFixed(1)} ms (last_seen_at indexed, ${number(countWith.devices)})`,
    ],
    [
      `bytes per agent.eventlogs.submit audit row (heap, TOAST, indexes; ${number(submissions * 10)} rows)`,
      bytes(written),
      `${bytes(before)} (the details before)`,
    ],
  ],
)}
A submission's details now: ${JSON.stringify(sample[0]?.details)}`);
  } finally {
    for (const socket of sockets) socket.terminate();
    await stack.close();
  }
}

main().catch((error: unknown) => {
  console.error('bench:agent-writes failed:', error);
  process.exit(1);
});
