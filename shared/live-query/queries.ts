import { deviceOfLogReader } from '../agents/log-access.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { pagination } from '../db/paging.ts';
import { askAgent } from './relay.ts';
import { agentData, type LiveEventsQuery } from './schemas.ts';

/**
 * The live event-log routes: logs:read, the device found as GET /devices/:id finds it
 * (another tenant's is 404), then the question relayed to its agent (shared/live-query/relay.ts).
 */

export async function listEventLogs(db: Db, principal: Principal, deviceId: string) {
  const device = await deviceOfLogReader(db, principal, deviceId);
  const logs = await askAgent(db, device.id, { type: 'eventlogs.list' }, agentData['eventlogs.list']);
  // Not paged: a device has a handful of logs; the envelope is the one of every list.
  return {
    data: logs,
    pagination: { page: 1, limit: logs.length, total: logs.length, totalPages: logs.length > 0 ? 1 : 0 },
  };
}

export async function getEventLog(db: Db, principal: Principal, deviceId: string, name: string) {
  const device = await deviceOfLogReader(db, principal, deviceId);
  return askAgent(db, device.id, { type: 'eventlogs.get', name }, agentData['eventlogs.get']);
}

export async function listEvents(db: Db, principal: Principal, deviceId: string, name: string, query: LiveEventsQuery) {
  const device = await deviceOfLogReader(db, principal, deviceId);
  // Filters not given are left out of the message (JSON drops undefined).
  const { events, total } = await askAgent(
    db,
    device.id,
    { type: 'eventlogs.events', name, ...query },
    agentData['eventlogs.events'],
  );
  return { data: events.slice(0, query.limit), pagination: pagination(query.page, query.limit, total) };
}

export async function getEvent(db: Db, principal: Principal, deviceId: string, name: string, recordId: number) {
  const device = await deviceOfLogReader(db, principal, deviceId);
  return askAgent(db, device.id, { type: 'eventlogs.event', name, recordId }, agentData['eventlogs.event']);
}
