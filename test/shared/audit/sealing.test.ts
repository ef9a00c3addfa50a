import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selectChainHead } from '#shared/audit/store.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { appendAudit, appendOne, readChain, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();

/** Two organization ids whose advisory lock keys (their first 32 bits) differ. */
function twoOrganizations(): [string, string] {
  const a = randomUUID();
  return [a, `${a[0] === 'a' ? 'b' : 'a'}${randomUUID().slice(1)}`];
}

describe('sealing an audit row', () => {
  it('gives the first row of an organization seq 1 and no prevChecksum', async () => {
    const orgId = randomUUID();
    const first = await appendOne(t.app, { orgId });
    expect(first).toEqual({
      id: expect.any(String),
      seq: 1,
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
      prevChecksum: null,
    });
  });

  it('links each row to the previous row of its organization, within one statement and across statements', async () => {
    const orgId = randomUUID();
    const sealed = [
      ...(await appendAudit(t.app, [{ orgId }, { orgId }, { orgId }])),
      await appendOne(t.app, { orgId }),
      ...(await appendAudit(t.app, [{ orgId }, { orgId }])),
    ];
    expect(sealed.map((row) => row.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(sealed.slice(1).map((row) => row.prevChecksum)).toEqual(sealed.slice(0, -1).map((row) => row.checksum));
  });

  it('keeps one chain per organization, also when one statement writes to several', async () => {
    const [a, b] = twoOrganizations();
    await appendAudit(
      t.app,
      [{ orgId: a }, { orgId: b }, { orgId: a }].sort((x, y) => x.orgId.localeCompare(y.orgId)),
    );
    await appendOne(t.app, { orgId: b });
    expect((await readChain(t.app, a)).map((row) => row.seq)).toEqual([1, 2]);
    expect((await readChain(t.app, b)).map((row) => row.seq)).toEqual([1, 2]);
  });

  it('moves the head of the organization to its last row', async () => {
    const orgId = randomUUID();
    const sealed = await appendAudit(t.app, [{ orgId }, { orgId }, { orgId }]);
    expect(await selectChainHead(t.app, orgId)).toEqual({ seq: 3, checksum: sealed[2]!.checksum });
  });

  it('leaves the seal to the database: a writer can set no seq, checksum or position, nor write a link', async () => {
    const orgId = randomUUID();
    const first = await appendOne(t.app, { orgId });
    const params = { orgId, actorId: randomUUID(), forged: 'f'.repeat(64) };
    await expect(
      t.app.query(
        `INSERT INTO audit_entries (org_id, actor_type, actor_id, action, seq, checksum)
         VALUES (:orgId::uuid, 'user', :actorId::uuid, 'device.delete', 99::bigint, :forged::text)`,
        params,
      ),
    ).rejects.toThrow(/column "seq" of relation "audit_entries" does not exist/);
    // A position the identity did not hand out yet would collide with a later writer's; none is below 1.
    for (const pos of [9_000_000_000_000, 0])
      await expect(
        t.app.query(
          `INSERT INTO audit_entries (pos, org_id, actor_type, actor_id, action) OVERRIDING SYSTEM VALUE
           VALUES (:pos::bigint, :orgId::uuid, 'user', :actorId::uuid, 'device.delete')`,
          { ...params, pos },
        ),
        `pos ${pos}`,
      ).rejects.toThrow(/audit_entries.pos is set by the database only/);
    // Nor can it take a position another organization's entry holds.
    await expect(
      t.app.query(
        `INSERT INTO audit_entries (pos, org_id, actor_type, actor_id, action) OVERRIDING SYSTEM VALUE
         SELECT pos, gen_random_uuid(), 'user', :actorId::uuid, 'device.delete' FROM audit_logs WHERE id = :id::uuid`,
        { ...params, id: first.id },
      ),
    ).rejects.toThrow(/audit_entries_pos_key/);
    await expect(
      t.app.query(
        `INSERT INTO audit_chain_links (org_id, seq, pos, checksum, prev_checksum)
         VALUES (:orgId::uuid, 2, 1, :forged::text, :forged::text)`,
        params,
      ),
    ).rejects.toThrow(/permission denied for table audit_chain_links/);
    const second = await appendOne(t.app, { orgId });
    expect(second).toMatchObject({ seq: 2, prevChecksum: first.checksum });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 2 });
  });

  it('rejects an actorType or result outside its enumeration', async () => {
    const orgId = randomUUID();
    await expect(appendOne(t.app, { orgId, actorType: 'robot' })).rejects.toThrow(
      /invalid input value for enum audit_actor_type: "robot"/,
    );
    await expect(appendOne(t.app, { orgId, result: 'maybe' })).rejects.toThrow(
      /invalid input value for enum audit_result/,
    );
    for (const actorType of ['user', 'api_key', 'agent', 'system', 'ai_agent'])
      await appendOne(t.app, { orgId, actorType });
    expect((await readChain(t.app, orgId)).map((row) => row.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('refuses a timestamp without a four-digit year, such as infinity', async () => {
    await expect(appendOne(t.app, { orgId: randomUUID(), timestamp: 'infinity' })).rejects.toThrow(/check constraint/);
  });

  it('leaves no gap for a row skipped by ON CONFLICT DO NOTHING or rolled back to a savepoint', async () => {
    const orgId = randomUUID();
    const first = await appendOne(t.app, { orgId });
    await t.app.query(
      `INSERT INTO audit_entries (id, org_id, actor_type, actor_id, action)
       VALUES (:duplicate::uuid, :orgId::uuid, 'user', :actorId::uuid, 'device.update'), (:fresh::uuid, :orgId::uuid, 'user', :actorId::uuid, 'device.update')
       ON CONFLICT (id) DO NOTHING`,
      { duplicate: first.id, fresh: randomUUID(), orgId, actorId: randomUUID() },
    );
    await t.app.transaction(async (tx) => {
      await tx.query('SAVEPOINT attempt');
      await appendOne(tx, { orgId });
      await tx.query('ROLLBACK TO SAVEPOINT attempt');
      await appendOne(tx, { orgId });
    });
    expect((await readChain(t.app, orgId)).map((row) => row.seq)).toEqual([1, 2, 3]);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 3 });
  });

  it('is refused in a REPEATABLE READ transaction, whose snapshot could predate the previous writer', async () => {
    await expect(
      t.app.transaction((tx) => appendOne(tx, { orgId: randomUUID() }), { isolation: 'REPEATABLE READ' }),
    ).rejects.toThrow(/READ COMMITTED/);
  });
});

describe('concurrent writers', () => {
  it('on separate connections produce one unforked chain with gap-free seq for one organization', async () => {
    const orgId = randomUUID();
    const writers = Array.from({ length: 8 }, () => createPgDb({ connectionString: t.db.urls.app, max: 1 }));
    try {
      await Promise.all(
        writers.map(async (writer, w) => {
          for (let i = 0; i < 50; i++) await appendOne(writer, { orgId, details: { writer: w, i } });
        }),
      );
    } finally {
      await Promise.all(writers.map((writer) => writer.close()));
    }
    const chain = await readChain(t.app, orgId);
    expect(chain.map((row) => row.seq)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    expect(new Set(chain.map((row) => row.prevChecksum)).size).toBe(400);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 400 });
  });

  it('of batches spanning two organizations, sorted by org_id, seal both chains without deadlock', async () => {
    const [a, b] = twoOrganizations().sort();
    const writers = Array.from({ length: 4 }, () => createPgDb({ connectionString: t.db.urls.app, max: 1 }));
    try {
      await Promise.all(
        writers.map(async (writer) => {
          for (let i = 0; i < 10; i++)
            await appendAudit(writer, [
              ...Array.from({ length: 10 }, () => ({ orgId: a })),
              ...Array.from({ length: 10 }, () => ({ orgId: b })),
            ]);
        }),
      );
    } finally {
      await Promise.all(writers.map((writer) => writer.close()));
    }
    expect(await verifyChain(t.app, a)).toEqual({ ok: true, checked: 400 });
    expect(await verifyChain(t.app, b)).toEqual({ ok: true, checked: 400 });
  });

  it('of different organizations do not wait for each other, while one organization takes turns', async () => {
    const [a, b] = twoOrganizations();
    const holder = createPgDb({ connectionString: t.db.urls.app, max: 1 });
    const other = createPgDb({ connectionString: t.db.urls.app, max: 1 });
    const appendWithin = (orgId: string, timeout: string) =>
      other.transaction(async (tx) => {
        await tx.query(`SELECT set_config('lock_timeout', :timeout::text, true)`, { timeout });
        return appendOne(tx, { orgId });
      });
    try {
      await holder.transaction(async (tx: Db) => {
        await appendOne(tx, { orgId: a });
        await expect(appendWithin(b, '5s')).resolves.toMatchObject({ seq: 1 });
        await expect(appendWithin(a, '200ms')).rejects.toMatchObject({ code: '55P03' });
      });
      await expect(appendWithin(a, '5s')).resolves.toMatchObject({ seq: 2 });
    } finally {
      await holder.close();
      await other.close();
    }
  });
});
