import type { AuditPagination } from '../../../shared/audit/schemas.ts';
import { type ApiClient, describeError } from '../api.ts';
import { fill, h } from '../element.ts';
import { count } from '../paging.ts';
import { saveFile } from '../save-file.ts';
import { type Filters, filterParams } from '../view-state.ts';

/** An export holds at most the newest 10,000 rows. */
const maxExportRows = 10_000;

/** CSV and JSON exports of the current view (GET /audit-logs/export?format=), with the same filters and search. */
export function exportButtons(api: ApiClient, filters: Filters, pagination: AuditPagination) {
  const beyondExport = pagination.totalExact ? pagination.total > maxExportRows : pagination.total >= maxExportRows;
  const status = h('span', { class: 'export-status', role: 'status' });
  const run = async (format: 'csv' | 'json', button: HTMLButtonElement) => {
    const buttons = [...container.querySelectorAll('button')];
    for (const b of buttons) b.disabled = true;
    button.setAttribute('aria-busy', 'true');
    fill(status, `Preparing the ${format.toUpperCase()} export…`);
    try {
      const params = filterParams(filters);
      params.set('format', format);
      const { blob, filename } = await api.download('/audit-logs/export', params);
      saveFile(blob, filename);
      const cut = beyondExport ? ` (the newest ${count(maxExportRows)} rows)` : '';
      fill(status, `Downloaded ${filename}${cut}.`);
    } catch (error) {
      fill(status, h('span', { class: 'notice-error' }, `Export failed. ${describeError(error, api.baseUrl)}`));
    } finally {
      for (const b of buttons) b.disabled = false;
      button.removeAttribute('aria-busy');
    }
  };
  const button = (format: 'csv' | 'json', label: string) => {
    const element: HTMLButtonElement = h(
      'button',
      { type: 'button', class: 'secondary-button', onclick: () => void run(format, element) },
      label,
    );
    return element;
  };
  const container = h(
    'div',
    { class: 'exports', role: 'group', 'aria-label': 'Export this view' },
    button('csv', 'Export CSV'),
    button('json', 'Export JSON'),
    status,
  );
  return container;
}
