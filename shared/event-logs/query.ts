import { deviceOfLogReader } from '../agents/log-access.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import type { EventLogsQuery } from './schemas.ts';
import { selectEventLogs } from './store.ts';

/** GET /devices/:id/eventlogs: logs:read, tenant-scoped as GET /devices/:id. */
export async function listEventLogs(db: Db, principal: Principal, deviceId: string, query: EventLogsQuery) {
  const device = await deviceOfLogReader(db, principal, deviceId);
  return selectEventLogs(db, device.id, query, query);
}
