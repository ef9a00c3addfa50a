import { type Db, one } from './db.ts';

/** Which database a connection reaches: the cluster's system identifier (pg_control_system) and the database name. */
export type DatabaseIdentity = {
  systemIdentifier: string;
  name: string;
};

export async function selectDatabaseIdentity(db: Db): Promise<DatabaseIdentity> {
  const identity = await one<DatabaseIdentity>(
    db,
    `SELECT system_identifier::text AS "systemIdentifier", current_database() AS name FROM pg_control_system()`,
  );
  return identity!;
}
