import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { appendAuditRows } from '#shared/audit/grouped-append.ts';
import { type AuditRowInput, insertAuditRows } from '#shared/audit/store.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { readChain, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();

const row = (orgId: string, n: number, overrides: Partial<AuditRowInput> = {}): AuditRowInput => ({
  orgId,
  timestamp: null,
  actorType: 'user',
  actorId: randomUUID(),
  actorEmail: 'tech@example.com',
  action: 'device.update',
  resourceType: 'device',
  resourceId: randomUUID(),
  resourceName: `WS-${n}`,
  details: { n },
  ipAddress: '203.0.113.7',
  userAgent: 'Mozilla/5.0',
  result: 'success',
  errorMessage: null,
  ...overrides,
});

/** How many transactions wrote the organization's rows (rows of one statement share their xmin). */
async function transactions(orgId: string): Promise<number> {
  const { rows } = await t.db.admin.query<{ n: number }>(
    'SELECT count(DISTINCT xmin::text) AS n FROM audit_entries WHERE org_id = :orgId::uuid',
    { orgId },
  );
  return rows[0]!.n;
}

describe('grouped audit appends of one process', () => {
  it('seal concurrent writes of one organization in fewer statements, each caller getting its own rows', async () => {
    const orgId = randomUUID();
    const db = createPgDb({ connectionString: t.db.urls.app, max: 4 });
    try {
      const calls = Array.from({ length: 40 }, (_, n) => appendAuditRows(db, [row(orgId, n), row(orgId, n + 100)]));
      const sealed = await Promise.all(calls);
      const chain = await readChain(t.app, orgId);
      expect(chain.map((stored) => stored.seq)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
      // Each caller's two rows, consecutive and in its order, under the ids the chain holds for them.
      const byId = new Map(chain.map((stored) => [stored.id, stored]));
      sealed.forEach((rows, n) => {
        expect(rows.map((r) => byId.get(r.id)?.resourceName)).toEqual([`WS-${n}`, `WS-${n + 100}`]);
        expect(byId.get(rows[1]!.id)!.seq).toBe(byId.get(rows[0]!.id)!.seq + 1);
      });
      expect(await transactions(orgId)).toBeLessThan(40);
      expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 80 });
    } finally {
      await db.close();
    }
  });

  it('fail only the caller whose row the database refuses, the others of its group are stored', async () => {
    const orgId = randomUUID();
    const db = createPgDb({ connectionString: t.db.urls.app, max: 2 });
    try {
      const calls = Array.from({ length: 6 }, (_, n) =>
        appendAuditRows(db, [row(orgId, n, n === 3 ? { timestamp: 'not a time' } : {})]),
      );
      const settled = await Promise.allSettled(calls);
      expect(settled.map((s) => s.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
      ]);
      expect((settled[3] as PromiseRejectedResult).reason).toMatchObject({ code: '22007' });
      const chain = await readChain(t.app, orgId);
      expect(chain.map((stored) => stored.resourceName).sort()).toEqual(['WS-0', 'WS-1', 'WS-2', 'WS-4', 'WS-5']);
      expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 5 });
    } finally {
      await db.close();
    }
  });

  it('fail every write of a group at once when the database is unreachable, without retrying each', async () => {
    // Nothing listens on this port: every statement fails with a refused connection.
    const unreachable = createPgDb({ connectionString: 'postgres://logbook_app@127.0.0.1:3419/none', max: 2 });
    let statements = 0;
    const counted: Db = {
      ...unreachable,
      query: (sql, params) => {
        statements++;
        return unreachable.query(sql, params);
      },
    };
    try {
      const settled = await Promise.allSettled(
        Array.from({ length: 6 }, (_, n) => appendAuditRows(counted, [row(randomUUID(), n)])),
      );
      expect(settled.every((s) => s.status === 'rejected')).toBe(true);
      expect(statements).toBe(6);
      const orgId = randomUUID();
      const grouped = await Promise.allSettled(
        Array.from({ length: 6 }, (_, n) => appendAuditRows(counted, [row(orgId, n)])),
      );
      expect(grouped.map((s) => s.status === 'rejected' && (s.reason as { code?: string }).code)).toEqual(
        Array(6).fill('ECONNREFUSED'),
      );
      // The first write alone, then the five that waited for it as one statement: none retried alone.
      expect(statements).toBe(8);
    } finally {
      await unreachable.close();
    }
  });

  it('seal one organization from 16 writers in 4 processes into one unforked, gap-free chain', async () => {
    const orgId = randomUUID();
    const processes = Array.from({ length: 4 }, () => createPgDb({ connectionString: t.db.urls.app, max: 4 }));
    try {
      await Promise.all(
        processes.flatMap((db, p) =>
          Array.from({ length: 4 }, async (_, w) => {
            for (let i = 0; i < 10; i++) await appendAuditRows(db, [row(orgId, p * 1000 + w * 100 + i)]);
          }),
        ),
      );
    } finally {
      await Promise.all(processes.map((db) => db.close()));
    }
    const chain = await readChain(t.app, orgId);
    expect(chain.map((stored) => stored.seq)).toEqual(Array.from({ length: 160 }, (_, i) => i + 1));
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 160 });
  });

  it('send rows of several organizations in one statement of their own', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const db = createPgDb({ connectionString: t.db.urls.app, max: 2 });
    try {
      const sealed = await appendAuditRows(db, [row(a, 1), row(b, 2), row(a, 3)]);
      expect(sealed.map((r) => r.orgId).sort()).toEqual([a, a, b].sort());
      const { rows } = await t.db.admin.query<{ n: number }>(
        'SELECT count(DISTINCT xmin::text) AS n FROM audit_entries WHERE org_id IN (:a::uuid, :b::uuid)',
        { a, b },
      );
      expect(rows[0]!.n).toBe(1);
    } finally {
      await db.close();
    }
  });
});

describe('the audit insert', () => {
  it('is a named prepared statement of the connection, on its generic plan from the sixth insert on', async () => {
    const orgId = randomUUID();
    const db = createPgDb({ connectionString: t.db.urls.app, max: 1 });
    try {
      for (let n = 0; n < 7; n++) await insertAuditRows(db, [row(orgId, n)]);
      // Five custom plans, then the generic one, planned once and reused.
      const { rows } = await db.query<{ name: string; generic: number; custom: number }>(
        `SELECT name, generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements
          WHERE name = 'logbook_audit_insert'`,
      );
      expect(rows).toEqual([{ name: 'logbook_audit_insert', generic: 2, custom: 5 }]);
      expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 7 });
    } finally {
      await db.close();
    }
  });
});
