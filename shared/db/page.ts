import type { Db, Params } from './db.ts';
import { pagination } from './paging.ts';

export interface Page {
  page: number;
  limit: number;
}

/** One page of `SELECT select FROM fromWhere ORDER BY orderBy`, with the total of the filtered set. */
export async function selectPage<T>(
  db: Db,
  select: string,
  fromWhere: string,
  orderBy: string,
  params: Params,
  page: Page,
) {
  const [{ rows: counted }, { rows }] = await Promise.all([
    db.query<{ total: number }>(`SELECT count(*) AS total FROM ${fromWhere}`, params),
    db.query(`SELECT ${select} FROM ${fromWhere} ORDER BY ${orderBy} LIMIT :limit::int OFFSET :offset::int`, {
      ...params,
      limit: page.limit,
      offset: (page.page - 1) * page.limit,
    }),
  ]);
  return { data: rows as T[], pagination: pagination(page.page, page.limit, counted[0]!.total) };
}
