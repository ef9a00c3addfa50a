import { heartbeat as heartbeatSchema } from '../agents/schemas.ts';
import { flushAudit } from '../audit/writer.ts';
import type { Db } from '../db/db.ts';
import { issueDetails } from '../errors.ts';
import { postToConnection } from '../live-query/agent-channel.ts';
import { agentOfConnection, connectionAudit } from '../live-query/connections.ts';
import { logger } from '../logger.ts';
import { heartbeatAndArm } from './evaluate.ts';

/**
 * A heartbeat carried by the agent's WebSocket connection ($default, `{ type: 'heartbeat', ...body }`): the same use
 * case as POST /agents/{id}/heartbeat (heartbeatAndArm), for the agent the connection's $connect authenticated and from
 * the source IP that $connect came from. Answered on the connection with `heartbeat.ack` and exactly the HTTP reply's
 * fields, or with an `error` naming the invalid field (nothing stored).
 */
export async function receiveHeartbeatMessage(
  db: Db,
  connectionId: string,
  message: Record<string, unknown>,
): Promise<void> {
  const speaker = await agentOfConnection(db, connectionId);
  if (!speaker) {
    await answer(connectionId, refusal('UNAUTHENTICATED', 'The connection no longer belongs to a live agent'));
    return;
  }
  const { type: _type, ...body } = message;
  const parsed = heartbeatSchema.safeParse(body);
  if (!parsed.success) {
    const details = issueDetails(parsed.error);
    const fields = details.map((d) => d.path).join(', ');
    await answer(connectionId, refusal('VALIDATION_FAILED', `Invalid heartbeat: ${fields}`, details));
    return;
  }
  const audit = connectionAudit(db, speaker);
  try {
    const reply = await heartbeatAndArm(db, speaker.agent, speaker.agent.agentId, parsed.data, audit, 'connection');
    await answer(connectionId, { type: 'heartbeat.ack', ...reply });
  } finally {
    await flushAudit(audit);
  }
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
  if ((await postToConnection(connectionId, reply)) === 'gone')
    logger.info('An agent left before its heartbeat was answered', { connectionId });
}
