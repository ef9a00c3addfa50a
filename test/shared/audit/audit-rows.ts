import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { auditChecksum, type CanonicalAuditRow } from '#shared/audit/canonical.ts';
import type { AuditRow } from '#shared/audit/row.ts';
import { selectChainPage } from '#shared/audit/store.ts';
import type { Db, Params } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

/** The columns a writer supplies; the rest defaults like the table does. */
export interface AuditInput {
  id?: string;
  orgId: string;
  timestamp?: string;
  actorType?: string;
  actorId?: string;
  actorEmail?: string | null;
  action?: string;
  resourceType?: string | null;
  resourceId?: string | null;
  resourceName?: string | null;
  details?: Record<string, unknown>;
  ipAddress?: string | null;
  userAgent?: string | null;
  result?: string;
  errorMessage?: string | null;
}

export type Sealed = { id: string; seq: number; checksum: string; prevChecksum: string | null };

const inputColumns = `id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type, resource_id, resource_name, details, ip_address, user_agent, result, error_message`;
const sealedColumns = `id::text AS id, seq, checksum, prev_checksum AS "prevChecksum"`;

const record = (input: AuditInput) => ({
  id: input.id ?? randomUUID(),
  org_id: input.orgId,
  timestamp: input.timestamp ?? null,
  actor_type: input.actorType ?? 'user',
  actor_id: input.actorId ?? randomUUID(),
  actor_email: input.actorEmail === undefined ? 'tech@example.com' : input.actorEmail,
  action: input.action ?? 'device.update',
  resource_type: input.resourceType === undefined ? 'device' : input.resourceType,
  resource_id: input.resourceId === undefined ? randomUUID() : input.resourceId,
  resource_name: input.resourceName === undefined ? 'WS-0042' : input.resourceName,
  details: input.details ?? {},
  ip_address: input.ipAddress === undefined ? '203.0.113.7' : input.ipAddress,
  user_agent: input.userAgent === undefined ? 'Mozilla/5.0' : input.userAgent,
  result: input.result ?? 'success',
  error_message: input.errorMessage ?? null,
});

/**
 * Appends rows in ONE statement, the way a writer sends a batch (into the entries, or into the history lane as an
 * import does), and returns them as sealed, in chain order.
 */
export async function appendAudit(
  db: Db,
  inputs: AuditInput[],
  table: 'audit_entries' | 'audit_history_lane' = 'audit_entries',
): Promise<Sealed[]> {
  const { rows: appended } = await db.query<{ pos: number }>(
    `INSERT INTO ${table} (${inputColumns})
     SELECT r.id, r.org_id, coalesce(r.timestamp, now()), r.actor_type, r.actor_id, r.actor_email, r.action, r.resource_type, r.resource_id,
            r.resource_name, r.details, r.ip_address, r.user_agent, r.result, r.error_message
       FROM jsonb_to_recordset(:rows::jsonb) AS r(id uuid, org_id uuid, timestamp timestamptz, actor_type audit_actor_type,
            actor_id uuid, actor_email text, action text, resource_type text, resource_id uuid, resource_name text, details jsonb,
            ip_address text, user_agent text, result audit_result, error_message text)
     RETURNING pos`,
    { rows: inputs.map(record) },
  );
  // Sealed when the statement ended: the links are there for the next one to read.
  const { rows } = await db.query<Sealed>(
    `SELECT ${sealedColumns} FROM audit_logs WHERE pos IN (SELECT value::bigint FROM jsonb_array_elements_text(:positions::jsonb)) ORDER BY seq`,
    { positions: appended.map((row) => row.pos) },
  );
  return rows;
}

export async function appendOne(db: Db, input: AuditInput): Promise<Sealed> {
  const [sealed] = await appendAudit(db, [input]);
  return sealed!;
}

/** The organization's whole chain as the verifier reads it. */
export function readChain(db: Db, orgId: string): Promise<AuditRow[]> {
  return selectChainPage(db, orgId, { afterSeq: null, untilSeq: null, rows: 100_000, bytes: 2_000_000_000 });
}

/** Runs `fn` on the superuser connection with triggers off: how an attacker with database access tampers. */
export function tamper<T>(admin: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  return admin.transaction(async (tx) => {
    await tx.query('SET LOCAL session_replication_role = replica');
    return fn(tx);
  });
}

/** A self-consistent forged row: its checksum is correct for its own values. */
export function forgedRow(
  orgId: string,
  seq: number,
  prevChecksum: string | null,
): CanonicalAuditRow & { checksum: string } {
  const row: CanonicalAuditRow = {
    id: randomUUID(),
    orgId,
    seq,
    timestamp: '2024-01-01T00:00:00.000000Z',
    actorType: 'user',
    actorId: randomUUID(),
    actorEmail: 'intruder@example.com',
    action: 'device.delete',
    resourceType: null,
    resourceId: null,
    resourceName: null,
    details: '{}',
    ipAddress: null,
    userAgent: null,
    result: 'success',
    errorMessage: null,
    prevChecksum,
  };
  return { ...row, checksum: auditChecksum(row) };
}

/** Stores a forged row with triggers off, bypassing the sealing: its entry and a link with its own values. */
export function insertForged(admin: Db, row: CanonicalAuditRow & { checksum: string }) {
  return tamper(admin, (tx) =>
    tx.query(
      `WITH entry AS (
         INSERT INTO audit_entries (id, org_id, timestamp, actor_type, actor_id, actor_email, action, details, result)
         VALUES (:id::uuid, :orgId::uuid, :timestamp::timestamptz, :actorType::audit_actor_type, :actorId::uuid, :actorEmail::text,
                 :action::text, :details::jsonb, :result::audit_result)
         RETURNING pos
       )
       INSERT INTO audit_chain_links (org_id, seq, pos, checksum, prev_checksum)
       SELECT :orgId::uuid, :seq::bigint, entry.pos, :checksum::text, :prevChecksum::text FROM entry`,
      row,
    ),
  );
}

/** Stores an entry with triggers off, so no link seals it; returns its id. */
export async function insertUnsealed(admin: Db, orgId: string): Promise<string> {
  const id = randomUUID();
  await tamper(admin, (tx) =>
    tx.query(
      `INSERT INTO audit_entries (id, org_id, actor_type, actor_id, action) VALUES (:id::uuid, :orgId::uuid, 'user', :id::uuid, 'device.delete')`,
      { id, orgId },
    ),
  );
  return id;
}

/** Columns of audit_logs that are the link's (audit_chain_links); the others are the entry's (audit_entries). */
const linkColumns = /^\s*(seq|checksum|prev_checksum)\s*=/;

/**
 * Changes rows of audit_logs as a tamperer would, on the table that holds the column: `set` is one assignment, `where`
 * a condition on org_id and seq (the link's columns).
 */
export function updateChainRows(tx: Db, set: string, where: string, params: Params) {
  return tx.query(
    linkColumns.test(set)
      ? `UPDATE audit_chain_links SET ${set} WHERE ${where}`
      : `UPDATE audit_entries SET ${set} WHERE pos IN (SELECT pos FROM audit_chain_links WHERE ${where})`,
    params,
  );
}

/** Deletes rows of audit_logs, entry and link, as a tamperer (or retention) would: `where` is on org_id and seq. */
export function deleteChainRows(tx: Db, where: string, params: Params) {
  return tx.query(
    `WITH link AS (DELETE FROM audit_chain_links WHERE ${where} RETURNING pos)
     DELETE FROM audit_entries WHERE pos IN (SELECT pos FROM link)`,
    params,
  );
}

export interface AuditDatabase {
  db: TestDatabase;
  /** logbook_app, the API's role. */
  app: Db;
  /** logbook_audit_admin, the retention worker's role. */
  auditAdmin: Db;
}

/** A fresh cloned database for the test file with a connection per role; closed after all tests. */
export function useAuditDatabase(): AuditDatabase {
  const state = {} as AuditDatabase;
  beforeAll(async () => {
    state.db = await createTestDatabase();
    state.app = createPgDb({ connectionString: state.db.urls.app, max: 4 });
    state.auditAdmin = createPgDb({ connectionString: state.db.urls.auditAdmin, max: 2 });
  });
  afterAll(async () => {
    await state.app?.close();
    await state.auditAdmin?.close();
    await state.db?.close();
  });
  return state;
}
