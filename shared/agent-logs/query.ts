import { deviceOfLogReader } from '../agents/log-access.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import type { DiagnosticLogsQuery } from './schemas.ts';
import { selectDiagnosticLogs } from './store.ts';

/** GET /devices/:id/diagnostic-logs: logs:read, tenant-scoped as GET /devices/:id. */
export async function listDiagnosticLogs(db: Db, principal: Principal, deviceId: string, query: DiagnosticLogsQuery) {
  const device = await deviceOfLogReader(db, principal, deviceId);
  return selectDiagnosticLogs(db, device.id, query, query);
}
