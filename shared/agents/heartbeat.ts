import type { z } from 'zod';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { deviceResource } from '../hierarchy/devices.ts';
import { reportedSerial } from '../hierarchy/serial-number.ts';
import { tellDeviceEvent } from '../queue/device-events.ts';
import { deviceOfAgent } from './log-access.ts';
import { onlineWindowMinutes } from './online.ts';
import type { heartbeat as heartbeatSchema } from './schemas.ts';
import { type HeartbeatReport, moveDeviceIp, recordHeartbeat } from './store.ts';

/** A heartbeat's body as the device's row keeps it: what it leaves out is null (kept as it was). */
export function heartbeatReport(report: z.output<typeof heartbeatSchema>): HeartbeatReport {
  return {
    agentVersion: report.agentVersion ?? null,
    status: report.status ?? null,
    serialNumber: reportedSerial(report.serialNumber),
    role: report.role ?? null,
    rebootPending: report.rebootPending ?? null,
    lastBootAt: report.lastBootAt ?? null,
    osUpdaterSuppressed: report.osUpdaterSuppressed ?? null,
  };
}

/**
 * POST /agents/:id/heartbeat: records when the device was last seen, from which IP (the audit rows'
 * client-IP rule), its agent version and status. The same use case answers a heartbeat on the agent's WebSocket
 * connection and records the connection's $connect (an empty report from the connection's source IP). A heartbeat
 * writes no audit row (telemetry must not drown the trail), except agent.source.ip.changed when the IP differs from
 * the one the device last reported.
 */
export async function heartbeat(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  report: z.output<typeof heartbeatSchema>,
  audit: AuditContext,
) {
  const device = await deviceOfAgent(db, caller, agentId);
  const ip = audit.ipAddress ?? null;
  const seen = await recordHeartbeat(db, device.id, { ip, ...heartbeatReport(report) });
  if (!seen) throw NotFound('Agent');
  await afterHeartbeat(db, device, { ...seen, ip }, audit);
  return { ok: true as const, serverTime: seen.lastSeenAt.toISOString(), device, connected: seen.connected };
}

/**
 * What follows a recorded heartbeat: device.online when the device comes back after the online window (not when it had
 * a live connection: a connected device is online between its heartbeats), and agent.source.ip.changed when the
 * heartbeat's IP differs from the one the device last reported (the new IP kept and audited in one transaction).
 */
export async function afterHeartbeat(
  db: Db,
  device: { id: string; orgId: string },
  seen: {
    connected: boolean;
    ip: string | null;
    previousIp: string | null;
    previousSeenAt: Date | null;
    lastSeenAt: Date;
    hostname: string;
    displayName: string | null;
  },
  audit: AuditContext,
): Promise<void> {
  if (
    !seen.connected &&
    (!seen.previousSeenAt || seen.lastSeenAt.getTime() - seen.previousSeenAt.getTime() > onlineWindowMinutes * 60_000)
  )
    await tellDeviceEvent({
      event: 'device.online',
      eventId: `online:${device.id}:${seen.previousSeenAt?.toISOString() ?? 'never'}`,
      deviceId: device.id,
    });
  const { ip, previousIp } = seen;
  // A heartbeat from the same address is one statement; a new address is kept and audited in one transaction.
  if (ip && previousIp && previousIp !== ip)
    await db.transaction(async (tx) => {
      if (!(await moveDeviceIp(tx, device.id, previousIp, ip))) return;
      await auditChange(
        tx,
        { ...audit, actorName: seen.hostname },
        {
          orgId: device.orgId,
          action: 'agent.source.ip.changed',
          ...deviceResource({ ...seen, id: device.id }),
          details: { previousIp, ip },
        },
      );
    });
}
