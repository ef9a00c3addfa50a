import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseNamedParams } from '#shared/db/db.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

describe('parseNamedParams', () => {
  it('finds a :name parameter and keeps its ::type cast in the text around it', () => {
    expect(parseNamedParams('SELECT * FROM t WHERE id = :id::uuid')).toEqual({
      parts: ['SELECT * FROM t WHERE id = ', '::uuid'],
      names: ['id'],
    });
  });

  it('reports a parameter used twice once per use, in order', () => {
    expect(parseNamedParams('SELECT :a::int + :b::int + :a::int').names).toEqual(['a', 'b', 'a']);
  });

  it('does not take a ::type cast alone for a parameter', () => {
    expect(parseNamedParams("SELECT 'x'::text, now()::date, 1::int").names).toEqual([]);
  });

  it('ignores :words inside string literals, also after doubled quotes', () => {
    expect(parseNamedParams("SELECT ':notparam', 'it''s :still_text', :real::int").names).toEqual(['real']);
  });

  it('ignores :words inside quoted identifiers', () => {
    expect(parseNamedParams('SELECT "quoted:ident" FROM "my:table" WHERE x = :x::int').names).toEqual(['x']);
  });

  it('ignores :words inside line comments and block comments', () => {
    const sql = 'SELECT 1 -- :comment\n, /* :c and :d */ :after::int';
    expect(parseNamedParams(sql).names).toEqual(['after']);
  });

  it('ignores :words inside dollar-quoted bodies, with or without a tag', () => {
    expect(parseNamedParams('DO $$ BEGIN PERFORM :x; END $$').names).toEqual([]);
    expect(parseNamedParams('DO $body$ BEGIN PERFORM :x; END $body$; SELECT :y::int').names).toEqual(['y']);
    expect(parseNamedParams('DO $f1$ PERFORM :x $f1$').names).toEqual([]);
  });

  it("ignores :words inside E'...' strings with backslash-escaped quotes", () => {
    expect(parseNamedParams("SELECT E'it\\'s :x', :y::int").names).toEqual(['y']);
  });

  it('returns the text unchanged as one part when there is no parameter', () => {
    expect(parseNamedParams('SELECT 1')).toEqual({ parts: ['SELECT 1'], names: [] });
  });
});

describe('the node-postgres executor', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.close());

  it('binds a parameter used twice to the same value', async () => {
    const { rows } = await db.admin.query('SELECT :a::int + :a::int AS s', { a: 2 });
    expect(rows).toEqual([{ s: 4 }]);
  });

  it('passes a :name::uuid parameter as a uuid', async () => {
    const id = '6f1c3f5e-4b7a-4c55-9d1e-0a2b3c4d5e6f';
    const { rows } = await db.admin.query('SELECT :id::uuid AS id, pg_typeof(:id::uuid)::text AS type', { id });
    expect(rows).toEqual([{ id, type: 'uuid' }]);
  });

  it('round-trips a JSON object parameter cast to jsonb', async () => {
    const doc = { name: 'x', nested: { n: 1, list: [1, 'two', null] }, flag: true };
    const { rows } = await db.admin.query('SELECT :doc::jsonb AS doc', { doc });
    expect(rows[0]!.doc).toEqual(doc);
  });

  it('leaves string literals containing :words untouched', async () => {
    const { rows } = await db.admin.query("SELECT ':notparam' AS t, :v::text AS v", { v: 'value' });
    expect(rows).toEqual([{ t: ':notparam', v: 'value' }]);
  });

  it('passes an undefined parameter as NULL', async () => {
    const { rows } = await db.admin.query('SELECT :v::text IS NULL AS empty', { v: undefined });
    expect(rows).toEqual([{ empty: true }]);
  });

  it('rejects a statement whose parameter is missing, naming it', async () => {
    await expect(db.admin.query('SELECT :present::int, :absent::int', { present: 1 })).rejects.toThrow(
      'missing SQL parameter :absent',
    );
  });
});
