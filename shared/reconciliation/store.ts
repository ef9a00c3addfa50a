import { type Db, one } from '../db/db.ts';
import type { ReconciliationState } from './schemas.ts';

/** An enrolled device as reconciliation matches it: serial number first, then hostname. */
export type EnrolledDevice = { id: string; hostname: string; serialNumber: string | null };

export function selectOrgDevices(db: Db, orgId: string) {
  return db
    .query<EnrolledDevice>(
      'SELECT id, hostname, serial_number AS "serialNumber" FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL',
      { orgId },
    )
    .then((r) => r.rows);
}

export type Counts = Record<ReconciliationState, number>;

export function insertReconciliation(
  db: Db,
  row: { orgId: string; createdBy: string; rows: number; counts: Counts; devices: object[] },
) {
  return one<{ id: string; createdAt: Date }>(
    db,
    `INSERT INTO enrollment_reconciliations (org_id, created_by, rows, enrolled, missing, extra, ambiguous, devices)
     VALUES (:orgId::uuid, :createdBy::uuid, :rows::int, :enrolled::int, :missing::int, :extra::int, :ambiguous::int, :devices::jsonb)
     RETURNING id, created_at AS "createdAt"`,
    { orgId: row.orgId, createdBy: row.createdBy, rows: row.rows, ...row.counts, devices: row.devices },
  ).then((r) => r!);
}

const countColumns = `id, created_at AS "createdAt", rows,
  json_build_object('enrolled', enrolled, 'missing', missing, 'extra', extra, 'ambiguous', ambiguous) AS counts`;

/** The last 100 uploads' counts, oldest first. */
export async function selectHistory(db: Db, orgId: string) {
  const { rows } = await db.query<{ id: string; createdAt: Date; rows: number; counts: Counts }>(
    `SELECT * FROM (SELECT ${countColumns} FROM enrollment_reconciliations WHERE org_id = :orgId::uuid
       ORDER BY created_at DESC, id DESC LIMIT 100) h ORDER BY "createdAt", id`,
    { orgId },
  );
  return rows;
}

export function selectDevicesOf(db: Db, id: string) {
  return one<{ devices: object[] }>(db, 'SELECT devices FROM enrollment_reconciliations WHERE id = :id::uuid', { id });
}
