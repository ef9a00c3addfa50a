import { z } from 'zod';

/**
 * A timestamptz column in a reply schema. Both executors read the column as a Date, which the reply's JSON writes
 * as ISO 8601 in UTC (Date#toJSON); read back from a reply it is that text. So a handler may return the row as read.
 */
export const timestampReply = z
  .union([z.date(), z.string()])
  .transform((value) => (value instanceof Date ? value.toISOString() : value))
  .pipe(z.iso.datetime());
