import { describe, expect, it } from 'vitest';
import { decide, summarize } from '#shared/imports/rows.ts';

const row = { row: 0 };

describe('decide: what commit does with a re-derived row', () => {
  it('applies create and update rows and reports the rest as they are', () => {
    expect(decide({ ...row, annotation: 'create' })).toEqual({ apply: 'create', outcome: 'created' });
    expect(decide({ ...row, annotation: 'update', targetId: 't' })).toEqual({ apply: 'update', outcome: 'updated' });
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
      outcome: 'updated',
    });
    expect(decide(held, { annotation: 'email-match' })).toEqual({ apply: 'create', outcome: 'created' });
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
    expect(summarize([{ outcome: 'created' }, { outcome: 'held' }, { outcome: 'created' }])).toEqual({
      created: 2,
      updated: 0,
      unchanged: 0,
      held: 1,
      refused: 0,
    });
  });
});
