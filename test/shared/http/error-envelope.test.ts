import { describe, expect, it } from 'vitest';
import { toErrorReply } from '#shared/http/error-envelope.ts';

/** A database error as node-postgres raises it: its SQLSTATE in `code`. */
const databaseError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('the error envelope', () => {
  it.each([
    ['22007', 'invalid input syntax for type timestamp with time zone'],
    ['22008', 'date/time field value out of range'],
    ['22009', 'time zone displacement out of range'],
    ['22P02', 'invalid input syntax for type json'],
  ])(
    'answers a value the database refuses (SQLSTATE %s) as 400 VALIDATION_FAILED, without the database message',
    (code, message) => {
      const reply = toErrorReply(databaseError(code, message));
      expect(reply).toMatchObject({ statusCode: 400 });
      const body = JSON.parse((reply as { body: string }).body);
      expect(body).toEqual({
        error: { code: 'VALIDATION_FAILED', message: 'Request contains a value the database refuses' },
      });
    },
  );

  it('still answers any other database error as 500 INTERNAL', () => {
    const reply = toErrorReply(databaseError('42P01', 'relation does not exist'));
    expect(reply).toMatchObject({ statusCode: 500 });
    expect(JSON.parse((reply as { body: string }).body)).toEqual({
      error: { code: 'INTERNAL', message: 'Internal error' },
    });
  });
});
