import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { type RunningAgent, startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { newSecret, secretPrefixes } from '#shared/auth/secrets.ts';
import { appStatementCount } from '#shared/db/client.ts';
import { startAgentStack } from './support/agent-stack.ts';
import { positive, status } from './support/format.ts';
import { formatTable } from './support/table.ts';

// `npm run bench` passes its arguments to every benchmark: options of the others are ignored here.
const { values: args } = parseArgs({
  options: {
    agents: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '300' },
    'heartbeat-seconds': { type: 'string', default: '60' },
    'ping-seconds': { type: 'string', default: '300' },
    calls: { type: 'string', default: '60' },
  },
  strict: false,
});
const agentCount = positive('agents', args.agents);
const windowSeconds = positive('seconds', args.seconds);
const heartbeatSeconds = positive('heartbeat-seconds', args['heartbeat-seconds']);
const pingSeconds = positive('ping-seconds', args['ping-seconds']);
const calls = positive('calls', args.calls);

/** Statements per call of `call`, over `count` calls. */
async function perCall(count: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const before = appStatementCount();
  for (let i = 0; i < count; i++) await call(i);
  return (appStatementCount() - before) / count;
}

const per = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));

async function main() {
  const stack = await startAgentStack('idle');
  const { base } = stack;
  const key = stack.enrollmentKey;
  const agents: RunningAgent[] = [];
  try {
    const request = async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => {
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      await reply.arrayBuffer();
      return reply.status;
    };
    const enrolled: { agentId: string; token: string }[] = [];
    for (let i = 0; i <= agentCount; i++) {
      const reply = await fetch(`${base}/api/v1/agents/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enrollmentKey: key, hostname: `IDLE-${String(i).padStart(4, '0')}` }),
      });
      if (reply.status !== 201) throw new Error(`enroll: ${reply.status} ${await reply.text()}`);
      enrolled.push((await reply.json()) as { agentId: string; token: string });
    }
    const probe = enrolled.pop()!;
    const orgPath = `/api/v1/orgs/organizations/${stack.orgId}`;

    status('uptime checks and refused credentials ...');
    const liveness = await perCall(calls, () => request('GET', '/api/v1/health'));
    const readiness = await perCall(calls, () => request('GET', '/api/v1/health/ready'));
    const garbage = await perCall(calls, (i) =>
      request('GET', orgPath, i % 2 ? { 'x-api-key': `key-${i}` } : { authorization: `Bearer not.a.jwt${i}` }),
    );
    const shaped = await perCall(calls, () =>
      request('GET', orgPath, { 'x-api-key': newSecret(secretPrefixes.apiKey) }),
    );
    const garbageAgent = await perCall(calls, (i) =>
      request('POST', `/api/v1/agents/${probe.agentId}/heartbeat`, { authorization: `Bearer lba_${i}` }, {}),
    );
    const heartbeat = await perCall(calls, () =>
      request('POST', `/api/v1/agents/${probe.agentId}/heartbeat`, { authorization: `Bearer ${probe.token}` }, {}),
    );

    status('keep-alive pings on one connection ...');
    const socket = new WebSocket(stack.wsUrl, { headers: { authorization: `Bearer ${probe.token}` } });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const pingsBefore = appStatementCount();
    for (let i = 0; i < calls; i++) socket.send(JSON.stringify({ type: 'ping' }));
    // The gateway invokes $default once per message in order; a last health check after a pause sees them done.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const ping = (appStatementCount() - pingsBefore) / calls;
    socket.close(1000);
    // Its $disconnect deletes the connection's row: done before the quiet window starts.
    await new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    const noAgentsBefore = appStatementCount();
    status(`no agents for ${Math.min(windowSeconds, 60)} s ...`);
    await new Promise((resolve) => setTimeout(resolve, Math.min(windowSeconds, 60) * 1000));
    const noAgents = appStatementCount() - noAgentsBefore;

    status(`connecting ${agentCount} simulated agents ...`);
    for (const [i, agent] of enrolled.entries()) {
      const running = startAgent({
        server: base,
        wsUrl: stack.wsUrl,
        agentId: agent.agentId,
        token: agent.token,
        store: generateEventStore({ computer: `IDLE-${i}` }),
        submitEvents: false,
        heartbeatSeconds,
        pingSeconds,
      });
      await running.connected();
      agents.push(running);
    }
    status(
      `${agentCount} idle agents for ${windowSeconds} s (heartbeat every ${heartbeatSeconds} s, ping every ${pingSeconds} s) ...`,
    );
    const windowBefore = appStatementCount();
    await new Promise((resolve) => setTimeout(resolve, windowSeconds * 1000));
    const windowStatements = appStatementCount() - windowBefore;
    status('');

    const hourly = (statements: number, seconds: number) => Math.round((statements * 3600) / seconds);
    const derived = Math.round(agentCount * ((3600 / heartbeatSeconds) * heartbeat + (3600 / pingSeconds) * ping));
    console.log(`
Logbook idle-floor benchmark (${new Date().toISOString().slice(0, 16)}Z): statements at the API's Db seam; ${availableParallelism()} CPUs shared with other work (load ${loadavg()[0]!.toFixed(1)}).
${formatTable(
  ['what', 'statements', 'baseline (same run)'],
  [
    [
      'uptime check GET /api/v1/health (liveness), per call',
      per(liveness),
      `${per(readiness)} (GET /api/v1/health/ready)`,
    ],
    ['garbage bearer / X-API-Key, per call (401)', per(garbage), `${per(shaped)} (unknown key of the right shape)`],
    ['garbage agent token, per call (401)', per(garbageAgent), ''],
    ['agent keep-alive ping on the WebSocket, per message', per(ping), ''],
    ['agent heartbeat POST /agents/{id}/heartbeat, per call', per(heartbeat), ''],
    [`no agents, ${Math.min(windowSeconds, 60)} s`, String(noAgents), ''],
    [
      `${agentCount} idle agents, ${windowSeconds} s (heartbeat ${heartbeatSeconds} s, ping ${pingSeconds} s)`,
      `${windowStatements} (${hourly(windowStatements, windowSeconds)}/hour)`,
      `${derived}/hour derived from the per-call figures`,
    ],
  ],
)}`);
  } finally {
    await Promise.all(agents.map((agent) => agent.stop()));
    await stack.close();
  }
}

main().catch((error: unknown) => {
  console.error('bench:idle failed:', error);
  process.exit(1);
});
