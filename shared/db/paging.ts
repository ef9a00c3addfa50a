import { z } from 'zod';
import { asInteger, decimalInteger } from '../request-values.ts';

/**
 * page/limit query parameters: page from 1, limit from 1; a limit above the route's
 * maximum is clamped to it.
 */
export function pageQuery(options: { defaultLimit: number; maxLimit: number }) {
  return {
    page: decimalInteger({ min: 1, max: 1_000_000 }).default(1).meta({ description: 'Page number, from 1' }),
    // Clamped before it is checked, so any number of digits above the maximum reads as the maximum.
    limit: z
      .preprocess(
        (value) =>
          typeof value === 'string' && /^\d+$/.test(value) && Number(value) > options.maxLimit
            ? String(options.maxLimit)
            : value,
        decimalInteger({ min: 1, max: options.maxLimit }),
      )
      .default(options.defaultLimit)
      .meta({
        description: `Page size, default ${options.defaultLimit}; above ${options.maxLimit} it is clamped to ${options.maxLimit}`,
        override: asInteger({ min: 1 }),
      }),
  };
}

export const paginationSchema = z
  .object({ page: z.number().int(), limit: z.number().int(), total: z.number().int(), totalPages: z.number().int() })
  .meta({ id: 'Pagination' });

export type Pagination = z.infer<typeof paginationSchema>;

export function pagination(page: number, limit: number, total: number): Pagination {
  return { page, limit, total, totalPages: Math.ceil(total / limit) };
}

/** The list envelope `{ data, pagination }` of an item schema. */
export const pageOf = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), pagination: paginationSchema });
