/**
 * `npm run agent -- enroll --url http://localhost:3000 --state <dir>/agent.yaml [--enrollment-key lbe_…]`: enrolls
 *   only (the deployment scripts' install step, docs/enrollment-scripts.md); the key and secret may come from
 *   LOGBOOK_ENROLLMENT_KEY / LOGBOOK_ENROLLMENT_SECRET. Exits 0 enrolled (or agent.yaml already there), 2 refused,
 *   3 server unreachable, 1 anything else.
 *
 * `npm run agent -- --url http://localhost:3000 --enrollment-key lbe_... [--ws-url ws://localhost:3001, by default --url's port + 1]
 *   [--state .data/agent/agent.yaml] [--hostname WIN-…] [--enrollment-secret …] [--heartbeat-seconds N: else as the server asks]
 *   [--posture 'rmm/Datto RMM=active,remote-access/TeamViewer=installed' | --posture none]`
 *
 * A simulated Windows agent: enrolls once (a later run finds agent.yaml and reuses its identity, as the
 * deployment job does), then heartbeats, posts diagnostic logs, submits stored event logs and answers
 * live event-log queries until Ctrl-C.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startAgent } from './agent.ts';
import { generateEventStore } from './event-store.ts';
import { EnrollmentRefused, enroll, readIdentity, ServerUnreachable, writeIdentity } from './identity.ts';
import { defaultMachine } from './monitoring.ts';
import { wsUrlBeside } from './ws-url.ts';

const agentVersion = '2.4.1-sim';

const { values: args, positionals } = parseArgs({
  options: {
    url: { type: 'string', default: `http://localhost:${process.env.PORT ?? 3000}` },
    'ws-url': { type: 'string' },
    'enrollment-key': { type: 'string' },
    'enrollment-secret': { type: 'string', default: process.env.AGENT_ENROLLMENT_SECRET },
    state: { type: 'string', default: '.data/agent/agent.yaml' },
    hostname: { type: 'string' },
    'heartbeat-seconds': { type: 'string' },
    // What the management-posture scan finds: `<category>/<product>=<status>,…`; empty: a clean scan; none: no scan.
    posture: { type: 'string', default: '' },
    // What monitoring measures (docs/monitoring.md): CPU and memory in percent, stopped services, the device's role.
    cpu: { type: 'string' },
    memory: { type: 'string' },
    'stopped-services': { type: 'string', default: '' },
    role: { type: 'string' },
  },
  strict: true,
  allowPositionals: true,
});

async function main() {
  if (positionals.length > 0 && positionals.join(' ') !== 'enroll')
    throw new Error(`Unknown command ${positionals.join(' ')}; known: enroll`);
  const server = args.url.replace(/\/+$/, '');
  const statePath = resolve(args.state);
  let identity = readIdentity(statePath);
  if (identity) {
    console.log(
      `agent.yaml found at ${statePath}: agent ${identity.agentId} (device ${identity.deviceId}); not enrolling again`,
    );
  } else {
    const enrollmentKey = args['enrollment-key'] ?? process.env.LOGBOOK_ENROLLMENT_KEY;
    if (!enrollmentKey) throw new Error(`No agent.yaml at ${statePath}: give --enrollment-key to enroll`);
    // A stable default name per state file, in the style of a Windows machine name.
    const hostname =
      args.hostname ?? `WIN-${createHash('sha256').update(statePath).digest('hex').slice(0, 7).toUpperCase()}`;
    identity = await enroll({
      server,
      enrollmentKey,
      enrollmentSecret: args['enrollment-secret'] || process.env.LOGBOOK_ENROLLMENT_SECRET || undefined,
      hostname,
      agentVersion,
    });
    writeIdentity(statePath, identity);
    console.log(
      `enrolled as ${hostname}: agent ${identity.agentId}, device ${identity.deviceId}; identity saved to ${statePath}`,
    );
  }
  if (positionals[0] === 'enroll') return;
  const wsUrl = args['ws-url'] ?? wsUrlBeside(server);
  const heartbeatSeconds = args['heartbeat-seconds'] === undefined ? undefined : Number(args['heartbeat-seconds']);
  if (heartbeatSeconds !== undefined && !(heartbeatSeconds > 0))
    throw new Error('--heartbeat-seconds takes a positive number');
  const agent = startAgent({
    server,
    wsUrl,
    agentId: identity.agentId,
    token: identity.token,
    store: generateEventStore({ computer: identity.hostname }),
    agentVersion,
    heartbeatSeconds,
    log: (line) => console.log(`[agent ${identity.hostname}] ${line}`),
    posture: args.posture === 'none' ? undefined : () => postureSnapshot(args.posture),
    machine: machineOf(args),
    role: args.role === 'server' || args.role === 'workstation' ? args.role : undefined,
  });
  console.log(
    `heartbeat ${heartbeatSeconds ? `every ${heartbeatSeconds} s` : 'as the server asks (900 s on the connection, 60 s over HTTP)'} to ${server}; live queries over ${wsUrl}. Ctrl-C stops.`,
  );
  const stop = async () => {
    await agent.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

/** The simulated machine's measurements, from the flags. */
function machineOf(flags: typeof args) {
  const machine = defaultMachine();
  if (flags.cpu !== undefined) machine.cpuPercent = Number(flags.cpu);
  if (flags.memory !== undefined) machine.memoryPercent = Number(flags.memory);
  for (const name of flags['stopped-services'].split(',').filter(Boolean)) machine.services[name] = 'stopped';
  if (!Number.isFinite(machine.cpuPercent) || !Number.isFinite(machine.memoryPercent))
    throw new Error('--cpu and --memory take numbers (percent)');
  return machine;
}

/** A management-posture snapshot from `<category>/<product>=<status>,…`, collected now. */
function postureSnapshot(spec: string) {
  const categories: Record<string, { name: string; status: string }[]> = {};
  for (const item of spec.split(',').filter(Boolean)) {
    const [path = '', status = 'active'] = item.split('=');
    const [category = '', ...name] = path.split('/');
    categories[category] = [...(categories[category] ?? []), { name: name.join('/'), status }];
  }
  return { collectedAt: new Date().toISOString(), categories };
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof EnrollmentRefused ? 2 : error instanceof ServerUnreachable ? 3 : 1);
});
