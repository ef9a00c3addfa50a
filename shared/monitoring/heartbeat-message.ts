import { afterHeartbeat, heartbeatReport } from '../agents/heartbeat.ts';
import { heartbeatQueueVariable, heartbeatSeconds } from '../agents/online.ts';
import { heartbeat as heartbeatSchema } from '../agents/schemas.ts';
import { type HeartbeatReport, recordConnectionHeartbeats } from '../agents/store.ts';
import { flushAudit } from '../audit/writer.ts';
import type { Db } from '../db/db.ts';
import { issueDetails } from '../errors.ts';
import { postToConnection } from '../live-query/agent-channel.ts';
import { connectionAudit } from '../live-query/connections.ts';
import { logger } from '../logger.ts';
import { effectivePoliciesOfDevices } from '../policies/effective.ts';
import { type Job, send } from '../queue/work-queue.ts';
import { offlineAfterResolved } from './evaluate.ts';

/** The job of a heartbeat carried by an agent's connection: the heartbeat queue's, run in batches. */
export const connectionHeartbeatKind = 'agents.heartbeat';
export type ConnectionHeartbeatJob = Job & {
  connectionId: string;
  report: HeartbeatReport;
  /** When the message arrived: the device was seen then, however late its batch runs. */
  receivedAt: string;
};

/**
 * A heartbeat carried by the agent's WebSocket connection ($default, `{ type: 'heartbeat', ...body }`): the same use
 * case as POST /agents/{id}/heartbeat, for the agent the connection's $connect authenticated and from the source IP
 * that $connect came from. An invalid body is answered at once with an `error` naming the field (nothing stored); a
 * valid one is queued, and the batch that records it (runConnectionHeartbeats) answers `heartbeat.ack` with exactly
 * the HTTP reply's fields once it is stored. Queuing reaches no database: a batch records many devices' heartbeats in
 * one statement. A heartbeat the queue refuses is recorded here, as a batch of one.
 */
export async function receiveHeartbeatMessage(
  db: Db,
  connectionId: string,
  message: Record<string, unknown>,
): Promise<void> {
  const { type: _type, ...body } = message;
  const parsed = heartbeatSchema.safeParse(body);
  if (!parsed.success) {
    const details = issueDetails(parsed.error);
    const fields = details.map((d) => d.path).join(', ');
    await answer(connectionId, refusal('VALIDATION_FAILED', `Invalid heartbeat: ${fields}`, details));
    return;
  }
  const job: ConnectionHeartbeatJob = {
    kind: connectionHeartbeatKind,
    connectionId,
    receivedAt: new Date().toISOString(),
    report: heartbeatReport(parsed.data),
  };
  try {
    await send({ ...job, dueAt: Date.now() }, heartbeatQueueVariable);
  } catch (error) {
    logger.warn('Could not queue a heartbeat: recorded at once', { connectionId, error: String(error) });
    const failed = await runConnectionHeartbeats(db, [job]);
    if (failed.length > 0) throw new Error('Could not record a heartbeat');
  }
}

/** Two reports of one connection in a batch, as if recorded one after the other: the later's fields win. */
function merged(earlier: HeartbeatReport | undefined, later: HeartbeatReport): HeartbeatReport {
  if (!earlier) return later;
  const pick = <K extends keyof HeartbeatReport>(key: K) => (later[key] ?? earlier[key]) as HeartbeatReport[K];
  return {
    agentVersion: pick('agentVersion'),
    status: pick('status'),
    serialNumber: pick('serialNumber'),
    role: pick('role'),
    rebootPending: pick('rebootPending'),
    lastBootAt: pick('lastBootAt'),
    osUpdaterSuppressed: pick('osUpdaterSuppressed'),
  };
}

/**
 * Records a batch of connections' heartbeats: one statement for every device (last seen now, the reported fields),
 * one or two for their effective monitoring items together (the configVersion of each reply); then, per device, what
 * a heartbeat sets off (agent.source.ip.changed when the connection's IP is new, offline monitors that were pending or
 * firing judged again) and its `heartbeat.ack`, sent only once all of it is stored. A connection that is gone or no
 * longer belongs to a live agent is answered UNAUTHENTICATED. Answers the jobs that failed (to be received again).
 */
export async function runConnectionHeartbeats(
  db: Db,
  jobs: readonly ConnectionHeartbeatJob[],
): Promise<ConnectionHeartbeatJob[]> {
  const reports = new Map<string, HeartbeatReport & { receivedAt: string }>();
  for (const job of jobs) {
    const earlier = reports.get(job.connectionId);
    const receivedAt = earlier && earlier.receivedAt > job.receivedAt ? earlier.receivedAt : job.receivedAt;
    reports.set(job.connectionId, { ...merged(earlier, job.report), receivedAt });
  }
  const rows = await recordConnectionHeartbeats(
    db,
    [...reports].map(([connectionId, report]) => ({ connectionId, ...report })),
  );
  const resolved =
    rows.length > 0
      ? await effectivePoliciesOfDevices(
          db,
          rows.map((row) => row.deviceId),
          'monitoring',
        )
      : new Map();
  const replies = new Map<string, Parameters<typeof postToConnection>[1]>();
  const failed = new Set<string>();
  for (const row of rows) {
    const speaker = {
      agent: { actorType: 'agent' as const, agentId: row.agentId, deviceId: row.deviceId, orgId: row.orgId },
      sourceIp: row.sourceIp,
    };
    const audit = connectionAudit(db, speaker);
    const device = { id: row.deviceId, orgId: row.orgId };
    try {
      await afterHeartbeat(db, device, { ...row, ip: row.sourceIp, connected: true }, audit);
      const effective = resolved.get(row.deviceId)?.effective;
      const configVersion = effective
        ? await offlineAfterResolved(db, row.deviceId, row.orgId, audit, true, effective)
        : '';
      replies.set(row.connectionId, {
        type: 'heartbeat.ack',
        ok: true,
        serverTime: row.lastSeenAt.toISOString(),
        configVersion,
        heartbeatSeconds: heartbeatSeconds.connected,
      });
    } catch (error) {
      logger.error('A heartbeat of a batch failed', { connectionId: row.connectionId, error: String(error) });
      failed.add(row.connectionId);
    } finally {
      await flushAudit(audit);
    }
  }
  for (const job of jobs) {
    if (failed.has(job.connectionId)) continue;
    const reply =
      replies.get(job.connectionId) ?? refusal('UNAUTHENTICATED', 'The connection no longer belongs to a live agent');
    await answer(job.connectionId, reply);
  }
  return jobs.filter((job) => failed.has(job.connectionId));
}

function refusal(code: string, message: string, details?: unknown) {
  return {
    type: 'error' as const,
    inReplyTo: 'heartbeat',
    error: { code, message, ...(details === undefined ? {} : { details }) },
  };
}

/** Best effort: an agent gone since it sent the heartbeat has nothing to read; the heartbeat is stored either way. */
async function answer(connectionId: string, reply: Parameters<typeof postToConnection>[1]) {
  try {
    if ((await postToConnection(connectionId, reply)) === 'gone')
      logger.info('An agent left before its heartbeat was answered', { connectionId });
  } catch (error) {
    logger.warn('Could not answer a heartbeat', { connectionId, error: String(error) });
  }
}
