import type {
  AuditDetailedEntry,
  AuditDetailedPage,
  AuditPagination,
  AuditViewerPage,
} from '../../shared/audit/schemas.ts';
import type { OrganizationPage } from '../../shared/hierarchy/schemas.ts';
import { type ApiClient, ApiError, apiClient, describeError } from './api.ts';
import { fill, h } from './element.ts';
import { type Row, rowOfDetailedEntry, rowOfViewerEntry } from './entries.ts';
import { rowsSummary } from './paging.ts';
import { type Claims, claimsOf, forgetToken, keepToken } from './session.ts';
import {
  type Filters,
  filterParams,
  readViewState,
  sameFilters,
  type ViewState,
  viewStateSearch,
} from './view-state.ts';
import { accountBar } from './views/account.ts';
import { entryDetail } from './views/entry-detail.ts';
import { exportButtons } from './views/export-buttons.ts';
import { filterForm } from './views/filter-form.ts';
import { pager } from './views/pager.ts';
import { signInForm } from './views/sign-in.ts';
import { trailTable } from './views/trail-table.ts';
import { verificationStatus, verifyShownRows } from './views/verification.ts';

export interface ViewerElements {
  main: HTMLElement;
  account: HTMLElement;
  /** role=alert: errors a reader must hear. */
  alert: HTMLElement;
}

interface Session {
  api: ApiClient;
  claims: Claims;
  organizations?: { id: string; name: string }[];
}

interface Layout {
  filters: HTMLElement;
  summary: HTMLElement;
  chain: HTMLElement;
  exports: HTMLElement;
  table: HTMLElement;
  pager: HTMLElement;
  detail: HTMLElement;
}

const sameList = (a: ViewState, b: ViewState) => sameFilters(a, b) && a.page === b.page && a.limit === b.limit;

/** The audit-log viewer: signs in, then shows the view its URL names and keeps the URL in step with what it shows. */
export function startViewer(apiBaseUrl: string, elements: ViewerElements) {
  let session: Session | undefined;
  let layout: Layout | undefined;
  let state = readViewState(location.search);
  let shownList: ViewState | undefined;
  let shownFilters: ViewState | undefined;
  let rows: Row[] = [];
  let listLoad: AbortController | undefined;
  let entryLoad: AbortController | undefined;

  const orgName = (orgId: string) =>
    session?.organizations?.find((org) => org.id === orgId)?.name ?? `Organization ${orgId.slice(0, 8)}`;
  const seesManyOrganizations = () => session?.claims.scope !== 'organization';

  function report(message: string) {
    fill(elements.alert, message ? h('p', { class: 'notice notice-error' }, message) : null);
  }

  function signIn(token: string) {
    keepToken(token);
    session = { api: apiClient(apiBaseUrl, token), claims: claimsOf(token) ?? {} };
    fill(
      elements.account,
      accountBar(session.claims, () => signOut()),
    );
    layout = undefined;
    shownList = undefined;
    shownFilters = undefined;
    void loadOrganizations(session).finally(() => show(readViewState(location.search)));
  }

  function signOut(message?: string) {
    listLoad?.abort();
    entryLoad?.abort();
    forgetToken();
    session = undefined;
    layout = undefined;
    fill(elements.account);
    report('');
    fill(elements.main, signInForm(signIn, message));
    // The message is announced (role=alert); the field takes the focus, ready for a fresh token.
    elements.main.querySelector<HTMLElement>('textarea')?.focus();
  }

  async function loadOrganizations(current: Session) {
    try {
      const page = await current.api.get<OrganizationPage>(
        '/orgs/organizations',
        new URLSearchParams({ limit: '100' }),
      );
      current.organizations = page.data.map(({ id, name }) => ({ id, name }));
    } catch {
      // Names are a comfort: without them an organization shows by its id.
    }
  }

  function navigate(next: ViewState) {
    const search = viewStateSearch(next);
    // The same view again (Apply without changes) adds no step for Back to walk through.
    if (search !== location.search) history.pushState(null, '', search || location.pathname);
    show(next);
  }

  /** Applying the filters always reads the list again: with unchanged filters, Apply is how new entries appear. */
  function applyFilters(filters: Filters) {
    shownList = undefined;
    navigate({ ...state, ...filters, page: 1, entry: '' });
  }

  /** Try again after a failure: the organizations too, when they could not be read at sign-in. */
  async function retry(current: Session) {
    if (layout) showLoading(layout);
    if (!current.organizations) {
      await loadOrganizations(current);
      if (current.organizations) shownFilters = undefined;
    }
    shownList = undefined;
    show(state);
  }

  function buildLayout(): Layout {
    const built: Layout = {
      filters: h('div', { class: 'filters-slot' }),
      summary: h('p', { class: 'summary', role: 'status' }),
      chain: h('div', { class: 'chain-slot', role: 'status' }),
      exports: h('div', { class: 'exports-slot' }),
      table: h('div', { class: 'table-slot', id: 'trail', tabindex: '-1' }),
      pager: h('div', { class: 'pager-slot' }),
      detail: h('aside', { class: 'detail', id: 'detail', 'aria-labelledby': 'detail-title', hidden: true }),
    };
    fill(
      elements.main,
      built.filters,
      h(
        'div',
        { class: 'workspace' },
        h(
          'section',
          { class: 'results', 'aria-label': 'Audit log' },
          h('div', { class: 'toolbar' }, built.summary, built.exports),
          built.chain,
          built.table,
          built.pager,
        ),
        built.detail,
      ),
    );
    return built;
  }

  function show(next: ViewState) {
    if (!session) return;
    layout ??= buildLayout();
    const previous = state;
    state = next;
    if (!shownFilters || !sameFilters(shownFilters, state)) {
      fill(
        layout.filters,
        filterForm(state, {
          organizations: seesManyOrganizations() ? session.organizations : undefined,
          onApply: applyFilters,
        }),
      );
      shownFilters = state;
    }
    if (!shownList || !sameList(shownList, state)) void loadList(session, layout);
    const panelOpen = !layout.detail.hidden;
    if (state.entry !== previous.entry || panelOpen !== Boolean(state.entry))
      void showEntry(session, layout, previous.entry);
  }

  function showLoading(view: Layout) {
    view.table.setAttribute('aria-busy', 'true');
    fill(view.summary, 'Loading…');
    fill(view.chain);
  }

  async function loadList(current: Session, view: Layout) {
    listLoad?.abort();
    const load = new AbortController();
    listLoad = load;
    const wanted = state;
    showLoading(view);
    try {
      const params = filterParams(wanted);
      // A whole trail is counted from its chain at once; counting a filtered set or a search row by row is the slow
      // part on a large trail, so for those the viewer asks whether more follow instead.
      if ([...params.keys()].some((name) => name !== 'orgId')) params.set('skipCount', 'true');
      params.set('page', String(wanted.page));
      params.set('limit', String(wanted.limit));
      let pagination: AuditPagination;
      if (wanted.q) {
        // Counting every match of a search over details is the slow part on a large trail: ask whether more follow instead.
        params.set('skipCount', 'true');
        const page = await current.api.get<AuditDetailedPage>('/audit-logs/search', params, load.signal);
        rows = page.data.map(rowOfDetailedEntry);
        pagination = page.pagination;
      } else {
        const page = await current.api.get<AuditViewerPage>('/audit-logs', params, load.signal);
        rows = page.entries.map(rowOfViewerEntry);
        pagination = page.pagination;
      }
      shownList = wanted;
      report('');
      renderList(current, view, pagination);
      document.title = `Audit log${wanted.page > 1 ? ` · page ${wanted.page}` : ''} · Logbook`;
      if (rows.length > 0) void showVerification(current, view, load.signal);
    } catch (error) {
      if (load.signal.aborted) return;
      if (error instanceof ApiError && error.status === 401) return signOut(describeError(error, current.api.baseUrl));
      rows = [];
      // The reason is in the alert above the page; the list's place offers to try again.
      report(describeError(error, current.api.baseUrl));
      fill(view.summary, 'The audit log could not be loaded.');
      fill(view.exports);
      fill(
        view.table,
        h(
          'p',
          { class: 'empty' },
          'No entries to show. ',
          h('button', { type: 'button', class: 'link', onclick: () => void retry(current) }, 'Try again'),
        ),
      );
      fill(view.pager);
    } finally {
      if (listLoad === load) view.table.removeAttribute('aria-busy');
    }
  }

  function renderList(current: Session, view: Layout, pagination: AuditPagination) {
    fill(view.summary, rowsSummary(pagination, rows.length));
    fill(view.exports, exportButtons(current.api, state, pagination));
    fill(
      view.table,
      rows.length > 0
        ? trailTable(rows, {
            orgName: seesManyOrganizations() && !state.orgId ? orgName : undefined,
            selectedId: state.entry,
            onOpen: (row) => navigate({ ...state, entry: row.id }),
          })
        : h(
            'p',
            { class: 'empty' },
            state.page > 1
              ? 'This page lies beyond the end of the list.'
              : invertedRange(state)
                ? 'No entries match: From is later than To, so no time lies between them. Swap or clear them.'
                : 'No entries match this view. Clear or widen the filters.',
          ),
    );
    fill(
      view.pager,
      pager(pagination, rows.length, {
        href: (page) => viewStateSearch({ ...state, page, entry: '' }) || location.pathname,
        onNavigate: (page, event) => {
          if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
          event.preventDefault();
          navigate({ ...state, page, entry: '' });
          view.table.focus();
        },
        onPageSize: (limit) => navigate({ ...state, limit, page: 1, entry: '' }),
      }),
    );
  }

  async function showVerification(current: Session, view: Layout, signal: AbortSignal) {
    fill(view.chain, h('p', { class: 'chain chain-pending' }, 'Verifying the hash chain of the rows shown…'));
    try {
      const results = await verifyShownRows(current.api, rows, signal);
      fill(
        view.chain,
        verificationStatus(results, orgName, seesManyOrganizations(), (id) => navigate({ ...state, entry: id })),
      );
    } catch {
      // Aborted: a newer view is loading.
    }
  }

  async function showEntry(current: Session, view: Layout, closedId: string) {
    entryLoad?.abort();
    for (const tr of view.table.querySelectorAll('tr.selected')) tr.classList.remove('selected');
    if (!state.entry) {
      view.detail.hidden = true;
      fill(view.detail);
      document.body.classList.remove('detail-open');
      view.table.querySelector<HTMLElement>(`tr[data-id="${CSS.escape(closedId)}"] .open-entry`)?.focus();
      return;
    }
    const load = new AbortController();
    entryLoad = load;
    const id = state.entry;
    view.table.querySelector(`tr[data-id="${CSS.escape(id)}"]`)?.classList.add('selected');
    const close = () => navigate({ ...state, entry: '' });
    const listed = rows.find((row) => row.id === id);
    view.detail.hidden = false;
    document.body.classList.add('detail-open');
    if (listed) fill(view.detail, entryDetail(listed, { orgName, onClose: close, loading: true }));
    else fill(view.detail, h('p', { class: 'muted' }, 'Reading the entry…'));
    view.detail.querySelector<HTMLElement>('#detail-title')?.focus();
    try {
      const entry = await current.api.get<AuditDetailedEntry>(
        `/audit-logs/logs/${encodeURIComponent(id)}`,
        undefined,
        load.signal,
      );
      fill(view.detail, entryDetail(rowOfDetailedEntry(entry), { orgName, onClose: close }));
    } catch (error) {
      if (load.signal.aborted) return;
      if (error instanceof ApiError && error.status === 401) return signOut(describeError(error, current.api.baseUrl));
      const message =
        error instanceof ApiError && error.status === 404
          ? 'This entry does not exist, or is not yours to read.'
          : describeError(error, current.api.baseUrl);
      if (listed) fill(view.detail, entryDetail(listed, { orgName, onClose: close, error: message }));
      else
        fill(
          view.detail,
          h(
            'div',
            { class: 'detail-body' },
            h('h2', { id: 'detail-title', tabindex: '-1' }, 'Entry not shown'),
            h('p', { class: 'notice notice-error' }, message),
            h('button', { type: 'button', class: 'secondary-button', onclick: close }, 'Close'),
          ),
        );
    }
    if (document.activeElement === document.body || !view.detail.contains(document.activeElement))
      view.detail.querySelector<HTMLElement>('#detail-title')?.focus();
  }

  window.addEventListener('popstate', () => show(readViewState(location.search)));
  document.addEventListener('keydown', (event) => {
    if (!session) return;
    const typing =
      event.target instanceof HTMLElement && event.target.closest('input, textarea, select, [contenteditable]');
    if (event.key === 'Escape' && state.entry) {
      event.preventDefault();
      navigate({ ...state, entry: '' });
    } else if (event.key === '/' && !typing) {
      event.preventDefault();
      document.querySelector<HTMLInputElement>('#search')?.focus();
    }
  });

  return { signIn, signOut };
}

/** Whether the view's From lies after its To (a date alone as To: the end of that day), a range no entry falls in. */
const invertedRange = (view: ViewState) =>
  view.from !== '' &&
  view.to !== '' &&
  Date.parse(view.from) > Date.parse(view.to) + (/^\d{4}-\d{2}-\d{2}$/.test(view.to) ? 86_400_000 - 1 : 0);
