import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDb } from '#shared/db/pg.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.close());

const indexes = async (table: string) => {
  const { rows } = await db.admin.query<{ def: string }>(
    `SELECT regexp_replace(indexdef, '^CREATE (UNIQUE )?INDEX \\S+ ON public\\.\\S+ USING (btree )?', '\\1') AS def
       FROM pg_indexes WHERE schemaname = 'public' AND tablename = :table::text`,
    { table },
  );
  return rows.map((r) => r.def).sort();
};

describe('agent_logs and device_event_logs', () => {
  it('agent_logs has the indexes its filters need, and those the device list and its search need', async () => {
    expect(await indexes('agent_logs')).toEqual(
      [
        'UNIQUE (id)',
        '(device_id)',
        '(org_id, "timestamp")',
        '(level, component)',
        'brin ("timestamp")',
        '(device_id, "timestamp" DESC, id DESC) INCLUDE (level, component)',
        'gin (message gin_trgm_ops)',
        // The log streams' ordering key (docs/audit-streaming.md "Streams"): only rows that have one.
        '(org_id, stream_seq) WHERE (stream_seq IS NOT NULL)',
      ].sort(),
    );
  });

  it('device_event_logs has the indexes its filters need, its unique key, and the one the device list needs', async () => {
    expect(await indexes('device_event_logs')).toEqual(
      [
        'UNIQUE (id)',
        '(device_id)',
        '(org_id, "timestamp")',
        '(category, level)',
        'UNIQUE (device_id, source, event_id)',
        '(device_id, "timestamp" DESC, id DESC) INCLUDE (category, level)',
        '(org_id, stream_seq) WHERE (stream_seq IS NOT NULL)',
      ].sort(),
    );
  });

  it('have the specified column types and lengths', async () => {
    const { rows } = await db.admin.query<{ table: string; column: string; type: string }>(
      `SELECT table_name AS table, column_name AS column,
              CASE WHEN data_type = 'USER-DEFINED' THEN udt_name ELSE data_type || COALESCE('(' || character_maximum_length || ')', '') END AS type
         FROM information_schema.columns WHERE table_name IN ('agent_logs', 'device_event_logs') ORDER BY table_name, ordinal_position`,
    );
    expect(rows.map((r) => `${r.table}.${r.column} ${r.type}`)).toEqual([
      'agent_logs.id uuid',
      'agent_logs.device_id uuid',
      'agent_logs.org_id uuid',
      'agent_logs.timestamp timestamp with time zone',
      'agent_logs.level agent_log_level',
      'agent_logs.component character varying(100)',
      'agent_logs.message text',
      'agent_logs.fields jsonb',
      'agent_logs.agent_version character varying(50)',
      'agent_logs.created_at timestamp with time zone',
      'agent_logs.stream_seq bigint',
      'device_event_logs.id uuid',
      'device_event_logs.device_id uuid',
      'device_event_logs.org_id uuid',
      'device_event_logs.timestamp timestamp with time zone',
      'device_event_logs.level event_log_level',
      'device_event_logs.category event_log_category',
      'device_event_logs.source character varying(255)',
      'device_event_logs.event_id character varying(100)',
      'device_event_logs.message text',
      'device_event_logs.details jsonb',
      'device_event_logs.created_at timestamp with time zone',
      'device_event_logs.stream_seq bigint',
    ]);
    const { rows: levels } = await db.admin.query<{ name: string; labels: string }>(
      `SELECT t.typname AS name, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) AS labels
         FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid
        WHERE t.typname IN ('agent_log_level', 'event_log_level', 'event_log_category') GROUP BY 1 ORDER BY 1`,
    );
    expect(levels).toEqual([
      { name: 'agent_log_level', labels: 'debug,info,warn,error' },
      { name: 'event_log_category', labels: 'security,hardware,application,system' },
      { name: 'event_log_level', labels: 'info,warning,error,critical' },
    ]);
  });

  it('reference devices and organizations without cascading deletes', async () => {
    const { rows } = await db.admin.query<{ table: string; target: string; onDelete: string }>(
      `SELECT conrelid::regclass::text AS table, confrelid::regclass::text AS target, confdeltype::text AS "onDelete"
         FROM pg_constraint WHERE contype = 'f' AND conrelid::regclass::text IN ('agent_logs', 'device_event_logs') ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { table: 'agent_logs', target: 'devices', onDelete: 'a' },
      { table: 'agent_logs', target: 'organizations', onDelete: 'a' },
      { table: 'device_event_logs', target: 'devices', onDelete: 'a' },
      { table: 'device_event_logs', target: 'organizations', onDelete: 'a' },
    ]);
  });

  it("are append-only for the API's role, which only reads the counts and writes its own budget rows", async () => {
    const { rows } = await db.admin.query<{ table: string; privileges: string }>(
      `SELECT t AS table, concat_ws(',',
                CASE WHEN has_table_privilege('logbook_app', t, 'SELECT') THEN 'SELECT' END,
                CASE WHEN has_table_privilege('logbook_app', t, 'INSERT') THEN 'INSERT' END,
                CASE WHEN has_table_privilege('logbook_app', t, 'UPDATE') THEN 'UPDATE' END,
                CASE WHEN has_table_privilege('logbook_app', t, 'DELETE') THEN 'DELETE' END,
                CASE WHEN has_table_privilege('logbook_app', t, 'TRUNCATE') THEN 'TRUNCATE' END) AS privileges
         FROM unnest(ARRAY['agent_logs', 'device_event_logs', 'agent_log_counts', 'agent_ingest_usage', 'agent_ingest_limits']) AS t ORDER BY 1`,
    );
    expect(rows).toEqual([
      { table: 'agent_ingest_limits', privileges: 'SELECT,INSERT,UPDATE' },
      { table: 'agent_ingest_usage', privileges: 'SELECT,INSERT,UPDATE' },
      { table: 'agent_log_counts', privileges: 'SELECT' },
      { table: 'agent_logs', privileges: 'SELECT,INSERT' },
      { table: 'device_event_logs', privileges: 'SELECT,INSERT' },
    ]);
  });

  it('count each insert of agent_logs into agent_log_counts per device, UTC hour, level and component, whoever inserts', async () => {
    const { rows: ids } = await db.admin.query<{ orgId: string; deviceId: string }>(
      `WITH p AS (INSERT INTO partners (name) VALUES ('P') RETURNING id),
            o AS (INSERT INTO organizations (partner_id, name) SELECT id, 'O' FROM p RETURNING id),
            s AS (INSERT INTO sites (org_id, name) SELECT id, 'S' FROM o RETURNING id, org_id),
            d AS (INSERT INTO devices (org_id, site_id, hostname) SELECT org_id, id, 'h' FROM s RETURNING id, org_id)
       SELECT org_id AS "orgId", id AS "deviceId" FROM d`,
    );
    const { orgId, deviceId } = ids[0]!;
    const app = createPgDb({ connectionString: db.urls.app, max: 1 });
    try {
      // A session in another time zone still counts in UTC hours.
      await app.query("SET TIME ZONE 'Asia/Kolkata'");
      await app.query(
        `INSERT INTO agent_logs (device_id, org_id, timestamp, level, component, message)
         SELECT :deviceId::uuid, :orgId::uuid, '2026-01-01T10:00:00Z'::timestamptz + i * interval '20 minutes', 'info', 'ws', 'm' FROM generate_series(0, 5) i`,
        { deviceId, orgId },
      );
      await expect(app.query('UPDATE agent_log_counts SET entries = 0')).rejects.toThrow(/permission denied/);
      await expect(app.query('DELETE FROM agent_logs')).rejects.toThrow(/permission denied/);
    } finally {
      await app.close();
    }
    await db.admin.query(
      `INSERT INTO agent_logs (device_id, org_id, timestamp, level, component, message) VALUES (:deviceId::uuid, :orgId::uuid, '2026-01-01T11:59:59.999999Z', 'info', 'ws', 'm')`,
      {
        deviceId,
        orgId,
      },
    );
    const { rows } = await db.admin.query(
      `SELECT hour, level::text AS level, component, entries FROM agent_log_counts WHERE device_id = :deviceId::uuid ORDER BY hour`,
      { deviceId },
    );
    expect(rows).toEqual([
      { hour: new Date('2026-01-01T10:00:00Z'), level: 'info', component: 'ws', entries: 3 },
      { hour: new Date('2026-01-01T11:00:00Z'), level: 'info', component: 'ws', entries: 4 },
    ]);
  });
});
