import { describe, expect, it } from 'vitest';
import { decide, linkedRecords, matchKey, plannedOutcome, repeatedKeys, summarize } from '#shared/imports/rows.ts';
import { annotations } from '#shared/imports/schemas.ts';

const row = { row: 1 };

describe('decide: what commit does with a re-derived row', () => {
  it('applies create and update rows and reports the rest as they are', () => {
    expect(decide({ ...row, annotation: 'create' })).toEqual({ apply: 'create', outcome: 'create' });
    expect(decide({ ...row, annotation: 'update', targetId: 't' })).toEqual({ apply: 'update', outcome: 'update' });
    expect(decide({ ...row, annotation: 'unchanged' })).toMatchObject({ apply: null, outcome: 'unchanged' });
    expect(decide({ ...row, annotation: 'invalid', reason: 'bad' })).toEqual({
      apply: null,
      outcome: 'refused',
      reason: 'bad',
    });
  });

  it('holds a fuzzy match without acknowledgement, links it to the acknowledged match, or creates a new record', () => {
    const held = { ...row, annotation: 'email-match' as const, targetId: 'c1' };
    expect(decide(held)).toMatchObject({ apply: null, outcome: 'held' });
    expect(decide(held, { annotation: 'email-match', targetId: 'c1' })).toEqual({
      apply: 'update',
      outcome: 'update',
    });
    expect(decide(held, { annotation: 'email-match' })).toEqual({ apply: 'create', outcome: 'create' });
    expect(decide(held, { annotation: 'email-match', targetId: 'c2' })).toMatchObject({ outcome: 'refused' });
  });

  it('refuses a row whose annotation changed since the preview it acknowledges', () => {
    expect(decide({ ...row, annotation: 'update', targetId: 'c1' }, { annotation: 'name-match' })).toMatchObject({
      apply: null,
      outcome: 'refused',
      reason: expect.stringMatching(/now update, not name-match/),
    });
  });

  it('counts outcomes', () => {
    expect(summarize([{ outcome: 'create' }, { outcome: 'held' }, { outcome: 'create' }])).toEqual({
      create: 2,
      update: 0,
      unchanged: 0,
      held: 1,
      refused: 0,
    });
  });

  it('plans at preview in the words commit uses, never in a past tense', () => {
    expect(annotations.map(plannedOutcome)).toEqual([
      'create',
      'update',
      'unchanged',
      'held',
      'held',
      'refused',
      'refused',
    ]);
  });
});

describe('matching on (sourceSystem, externalId)', () => {
  it('finds repeated keys of a request and stored records linked by key, only those with an externalId', () => {
    const rows = [
      { sourceSystem: 'psa', externalId: '1' },
      { sourceSystem: 'psa', externalId: '1' },
      { sourceSystem: 'rmm', externalId: '1' },
      { sourceSystem: 'psa' },
      { sourceSystem: 'psa' },
    ];
    expect([...repeatedKeys(rows)]).toEqual([matchKey({ sourceSystem: 'psa', externalId: '1' })]);
    const linked = linkedRecords([
      { id: 'a', sourceSystem: 'rmm', externalId: '1' },
      { id: 'b', sourceSystem: null, externalId: null },
    ]);
    expect([...linked.values()].map((record) => record.id)).toEqual(['a']);
    expect(linked.get(matchKey({ sourceSystem: 'rmm', externalId: '1' }))?.id).toBe('a');
  });
});
