import type { Db } from '#shared/db/db.ts';

/** The server's version and the settings that move write figures (fsync: the embedded server runs without it). */
export async function serverSettings(admin: Db, where: string): Promise<string> {
  const { rows } = await admin.query<{
    version: string;
    fsync: string;
    synchronous_commit: string;
    shared_buffers: string;
  }>(
    `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
            current_setting('synchronous_commit') AS synchronous_commit, current_setting('shared_buffers') AS shared_buffers`,
  );
  const server = rows[0]!;
  return `PostgreSQL ${server.version} on ${where},
fsync ${server.fsync}, synchronous_commit ${server.synchronous_commit}, shared_buffers ${server.shared_buffers}`;
}
