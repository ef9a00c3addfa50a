import { h } from '../element.ts';
import { humanizeAction, knownActionPhrases } from '../humanize.ts';
import { filterInstant, instantOfLocalInput, localInputValue } from '../time.ts';
import { emptyFilters, type Filters, type ViewState } from '../view-state.ts';

export interface FilterFormOptions {
  /** The organizations a partner or platform user may pick from; absent for organization users. */
  organizations?: { id: string; name: string }[];
  onApply(filters: Filters): void;
}

function field(label: string, input: HTMLElement, hint?: string) {
  return h(
    'label',
    { class: 'field' },
    h('span', { class: 'label' }, label),
    input,
    hint ? h('span', { class: 'hint' }, hint) : null,
  );
}

/**
 * A datetime-local input for a from/to filter. It shows the filter's instant in local time; a value left as shown
 * keeps the filter as the link gave it (a date alone, an offset), so a shared link means the same to everyone.
 * A link's value that is no time at all (`from=yesterday`) shows empty, and Apply drops it.
 */
function instantInput(name: 'from' | 'to', value: string) {
  const at = filterInstant(value, name);
  const shown = at ? localInputValue(at) : '';
  const input = h('input', { type: 'datetime-local', name, step: '1', value: shown });
  return { input, read: () => (at && input.value === shown ? value : (instantOfLocalInput(input.value, name) ?? '')) };
}

const wide = matchMedia('(min-width: 721px)');

/** The filters beside search: always shown on a wide screen; on a phone folded away unless one is in use. */
function moreFilters(state: ViewState, ...content: HTMLElement[]) {
  const active = (['orgId', 'user', 'action', 'resource', 'from', 'to'] as const).filter((name) => state[name]).length;
  const details = h(
    'details',
    { class: 'more-filters', open: wide.matches || active > 0 },
    h('summary', {}, active > 0 ? `Filters (${active} in use)` : 'Filters'),
    ...content,
  );
  wide.addEventListener('change', () => {
    if (wide.matches) details.open = true;
  });
  return details;
}

export function filterForm(state: ViewState, options: FilterFormOptions) {
  const text = (name: keyof Filters, type = 'text', extra: Record<string, string> = {}) =>
    h('input', { type, name, value: state[name], autocomplete: 'off', spellcheck: 'false', ...extra });
  const search = text('q', 'search', { placeholder: 'Search actions, people, resources, details…', id: 'search' });
  const user = text('user', 'text', { placeholder: 'e-mail or name' });
  const action = text('action', 'text', { placeholder: 'e.g. login', list: 'known-actions' });
  const resource = text('resource', 'text', { placeholder: 'type or name' });
  const from = instantInput('from', state.from);
  const to = instantInput('to', state.to);
  const organizations = options.organizations && [
    ...options.organizations,
    // A link may name an organization the list no longer holds (deleted: its trail stays readable).
    ...(state.orgId && !options.organizations.some((org) => org.id === state.orgId)
      ? [{ id: state.orgId, name: state.orgId }]
      : []),
  ];
  const organization = organizations
    ? h(
        'select',
        { name: 'orgId' },
        h('option', { value: '' }, 'All organizations'),
        organizations.map((org) => h('option', { value: org.id, selected: org.id === state.orgId }, org.name)),
      )
    : undefined;

  const read = (): Filters => ({
    q: search.value.trim(),
    user: user.value.trim(),
    action: action.value.trim(),
    resource: resource.value.trim(),
    from: from.read(),
    to: to.read(),
    orgId: organization?.value ?? state.orgId,
  });
  const form = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Filter the audit log',
      onsubmit: (event) => {
        event.preventDefault();
        options.onApply(read());
      },
    },
    h(
      'div',
      { class: 'search-row' },
      field('Search', search),
      h('button', { type: 'submit', class: 'primary-button' }, 'Apply'),
      h(
        'button',
        { type: 'button', class: 'secondary-button', onclick: () => options.onApply({ ...emptyFilters }) },
        'Clear',
      ),
    ),
    moreFilters(
      state,
      h(
        'div',
        { class: 'filter-grid' },
        organization ? field('Organization', organization) : null,
        field('User', user),
        field('Action', action),
        field('Resource', resource),
        field('From', from.input),
        field('To', to.input),
      ),
      h(
        'p',
        { class: 'hint' },
        'Times are in your time zone. Text filters match any part, ignoring case. Press / to search.',
      ),
    ),
    h(
      'datalist',
      { id: 'known-actions' },
      knownActionPhrases().map(([code]) => h('option', { value: code }, humanizeAction(code))),
    ),
  );
  return form;
}
