import type { Db } from '#shared/db/db.ts';

/**
 * What a history import stored for an organization, counted with the administrator's connection (asked for at each
 * count: a test file's database opens in its beforeAll).
 */
export function historyImportCounts(admin: () => Db) {
  const count = async (sql: string, orgId: string) => {
    const { rows } = await admin().query<{ n: number }>(sql, { orgId });
    return rows[0]!.n;
  };
  return {
    /** Rows waiting in the history lane. */
    laneRows: (orgId: string) =>
      count('SELECT count(*)::int AS n FROM ONLY audit_history_lane WHERE org_id = :orgId::uuid', orgId),
    /** Keys of imported rows. */
    importKeys: (orgId: string) =>
      count('SELECT count(*)::int AS n FROM audit_import_keys WHERE org_id = :orgId::uuid', orgId),
    /** The imports' summary rows (audit.history.import). */
    summaryRows: (orgId: string) =>
      count(
        `SELECT count(*)::int AS n FROM audit_logs WHERE org_id = :orgId::uuid AND action = 'audit.history.import'`,
        orgId,
      ),
    /** Imported rows moved out of the lane into audit_entries. */
    entriesProper: (orgId: string) =>
      count(
        `SELECT count(*)::int AS n FROM ONLY audit_entries WHERE org_id = :orgId::uuid AND details ? 'imported'`,
        orgId,
      ),
  };
}
