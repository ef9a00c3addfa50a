import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';

/** Ready when the database answers as the API's role and the schema is migrated. */
export async function checkHealth(db: Db): Promise<{ status: 'ok' }> {
  try {
    await db.query('SELECT 1 FROM schema_migrations LIMIT 1');
  } catch {
    throw new DomainError('UNAVAILABLE', 'The database is not reachable');
  }
  return { status: 'ok' };
}
