import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { prepareDatabase, roleUrls } from '#infra/local/database.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { databaseName } from '#test/support/global-setup.ts';
import { appendOne, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();

/**
 * A database where everybody may create objects in schema public, as on databases created before
 * PostgreSQL 15 or pg_upgraded from one.
 */
const openPublicSchema = () => t.db.admin.query('GRANT CREATE ON SCHEMA public TO PUBLIC');

describe('the sealing functions on a database where PUBLIC may create in schema public', () => {
  it("do not call functions the API's role planted in public: the row is sealed by the built-ins", async () => {
    await openPublicSchema();
    const app = createPgDb({ connectionString: t.db.urls.app, max: 1 });
    try {
      // A closer match than pg_catalog.convert_to(text, name) for convert_to(text, 'UTF8'): it records in the
      // session that it ran (with the owner's rights, inside the sealing trigger) and hands back forged bytes.
      await app.query(`CREATE FUNCTION public.convert_to(text, text) RETURNS bytea LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_catalog.set_config('planted.ran', 'convert_to', false); RETURN pg_catalog.convert_to('forged', 'UTF8'::name); END $$`);
      const orgId = randomUUID();
      await app.transaction(async (tx) => {
        await appendOne(tx, { orgId });
        await appendOne(tx, { orgId });
      });
      const { rows } = await app.query<{ ran: string | null }>(
        `SELECT nullif(current_setting('planted.ran', true), '') AS ran`,
      );
      expect(rows[0]!.ran).toBeNull();
      expect(await verifyChain(app, orgId)).toEqual({ ok: true, checked: 2 });
    } finally {
      await app.close();
    }
  });

  it('run with a search_path of pg_catalog and pg_temp only, every one of them', async () => {
    const { rows } = await t.db.admin.query<{ name: string; config: string[] | null }>(
      `SELECT p.proname AS name, p.proconfig AS config FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.prosecdef ORDER BY p.proname`,
    );
    expect(rows.map((row) => row.name)).toEqual(
      expect.arrayContaining([
        'agent_logs_count',
        'audit_entries_refuse_linked_delete',
        'audit_entries_seal',
        'audit_logs_checkpoint',
      ]),
    );
    // Some also fix a planner setting of their own (the history lane's move and id check read by index only).
    for (const row of rows) expect(row.config, row.name).toContain('search_path=pg_catalog, pg_temp');
    for (const row of rows)
      expect(
        row.config?.filter((setting) => !setting.startsWith('search_path=')),
        row.name,
      ).toEqual(
        row.name === 'audit_history_move' || row.name === 'audit_history_lane_unique_ids' ? ['enable_seqscan=off'] : [],
      );
  });
});

describe('migrating a database whose schema public is open to everybody', () => {
  it('takes CREATE on public from PUBLIC, so the API role cannot plant objects there', async () => {
    const server = createPgDb({ connectionString: inject('serverUrl'), max: 1 });
    const name = `${inject('databasePrefix')}_open_${randomBytes(4).toString('hex')}`;
    try {
      await server.query(`CREATE DATABASE ${name}`);
      const adminUrl = databaseName(inject('serverUrl'), name);
      const admin = createPgDb({ connectionString: adminUrl, max: 1 });
      try {
        await admin.query('GRANT CREATE ON SCHEMA public TO PUBLIC');
        await prepareDatabase(adminUrl);
        const { rows } = await admin.query<{ app: boolean; everybody: boolean }>(
          `SELECT has_schema_privilege('logbook_app', 'public', 'CREATE') AS app,
                  coalesce(bool_or(a.grantee = 0 AND a.privilege_type = 'CREATE'), false) AS everybody
             FROM pg_namespace n LEFT JOIN LATERAL aclexplode(n.nspacl) a ON true WHERE n.nspname = 'public'`,
        );
        expect(rows[0]).toEqual({ app: false, everybody: false });
      } finally {
        await admin.close();
      }
      const app = createPgDb({ connectionString: roleUrls(adminUrl).app, max: 1 });
      try {
        await expect(
          app.query('CREATE FUNCTION public.planted() RETURNS int LANGUAGE sql RETURN 1'),
        ).rejects.toMatchObject({ code: '42501' });
      } finally {
        await app.close();
      }
    } finally {
      await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.close();
    }
  });
});
