/**
 * What the page shows, bound to its URL: filters, search, page, page size and the open entry. A view is a link,
 * so it can be bookmarked, shared, reloaded, and Back walks through the views.
 */
export const filterNames = ['q', 'user', 'action', 'resource', 'from', 'to', 'orgId'] as const;
export type FilterName = (typeof filterNames)[number];
export type Filters = Record<FilterName, string>;

export interface ViewState extends Filters {
  page: number;
  limit: number;
  /** The entry whose detail panel is open; '' for none. */
  entry: string;
}

export const pageSizes = [25, 50, 100] as const;
export const defaultLimit = 50;

export const emptyFilters: Filters = { q: '', user: '', action: '', resource: '', from: '', to: '', orgId: '' };

function wholeNumber(text: string | null, fallback: number, max: number): number {
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 ? Math.min(n, max) : fallback;
}

export function readViewState(search: string): ViewState {
  const params = new URLSearchParams(search);
  const filters = Object.fromEntries(filterNames.map((name) => [name, params.get(name)?.trim() ?? ''])) as Filters;
  return {
    ...filters,
    page: wholeNumber(params.get('page'), 1, 1_000_000),
    limit: wholeNumber(params.get('limit'), defaultLimit, 100),
    entry: params.get('entry') ?? '',
  };
}

/** The URL query of a view: only what differs from the defaults, in a fixed order, so equal views have equal links. */
export function viewStateSearch(state: ViewState): string {
  const params = new URLSearchParams();
  for (const name of filterNames) if (state[name]) params.set(name, state[name]);
  if (state.page !== 1) params.set('page', String(state.page));
  if (state.limit !== defaultLimit) params.set('limit', String(state.limit));
  if (state.entry) params.set('entry', state.entry);
  const query = params.toString();
  return query ? `?${query}` : '';
}

/** The filters as the API takes them (the common list filters, q for search and export). */
export function filterParams(state: Filters): URLSearchParams {
  const params = new URLSearchParams();
  for (const name of filterNames) if (state[name]) params.set(name, state[name]);
  return params;
}

export function sameFilters(a: Filters, b: Filters): boolean {
  return filterNames.every((name) => a[name] === b[name]);
}
