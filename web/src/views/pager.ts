import type { AuditPagination } from '../../../shared/audit/schemas.ts';
import { h } from '../element.ts';
import { count } from '../paging.ts';
import { pageSizes } from '../view-state.ts';

export interface PagerOptions {
  /** The link of a page. */
  href(page: number): string;
  onNavigate(page: number, event: MouseEvent): void;
  onPageSize(limit: number): void;
}

function pageLink(label: string, page: number | undefined, options: PagerOptions, rel?: string) {
  if (page === undefined) return h('span', { class: 'page-link', 'aria-disabled': 'true' }, label);
  return h(
    'a',
    {
      class: 'page-link',
      href: options.href(page),
      rel,
      onclick: (event) => options.onNavigate(page, event as MouseEvent),
    },
    label,
  );
}

export function pager(pagination: AuditPagination, shown: number, options: PagerOptions) {
  const { page, totalExact, hasMore: hasNext } = pagination;
  const last = totalExact ? Math.max(pagination.totalPages, 1) : undefined;
  const position = last ? `Page ${count(page)} of ${count(last)}` : `Page ${count(page)}${hasNext ? ' of more' : ''}`;
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    pageLink('« First', page > 1 ? 1 : undefined, options),
    // A link past the end (an old bookmark, a shorter trail) steps back to the last page, not to another empty one.
    pageLink('‹ Previous', page > 1 ? Math.min(page - 1, last ?? page) : undefined, options, 'prev'),
    h(
      'span',
      { class: 'page-position', 'aria-current': 'page' },
      shown === 0 && page > 1 ? `Page ${count(page)}` : position,
    ),
    pageLink('Next ›', hasNext ? page + 1 : undefined, options, 'next'),
    last ? pageLink('Last »', last !== page ? last : undefined, options) : null,
    h(
      'label',
      { class: 'page-size' },
      'Rows per page ',
      h(
        'select',
        { onchange: (event) => options.onPageSize(Number((event.target as HTMLSelectElement).value)) },
        pageSizes.map((size) =>
          h('option', { value: String(size), selected: size === pagination.limit }, String(size)),
        ),
      ),
    ),
  );
}
