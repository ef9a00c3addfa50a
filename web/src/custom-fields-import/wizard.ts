/**
 * The custom-field import wizard (docs/custom-fields.md): choose the source system and the pass → upload a CSV or JSON
 * export → map its columns (values; suggested by the server) → preview every row with its status, filters and
 * counts → commit in requests that fit API Gateway (a values file as one pass, with a progress bar) → the result,
 * with the rows not applied as a CSV download.
 */
import type {
  CustomFieldDefinitionPage,
  DefinitionsImportReply,
  ValuesImportReply,
} from '../../../shared/custom-fields/schemas.ts';
import { type Child, fill, h } from '../element.ts';
import type { PageContext } from '../page-shell.ts';
import { chunksOf, type ImportFile, readImportFile, toCsv } from './file.ts';

type Kind = 'definitions' | 'values';
type Role = NonNullable<ValuesImportReply['columns'][string]>;
type Chunk = ReturnType<typeof chunksOf>[number];

const sourceSystems = [
  ['datto-rmm', 'Datto RMM (device UDFs)'],
  ['ninjaone', 'NinjaOne (device custom fields)'],
  ['connectwise-automate', 'ConnectWise Automate (EDFs)'],
  ['generic', 'Generic CSV'],
] as const;
const steps = ['Source', 'Upload', 'Map columns', 'Preview', 'Commit', 'Result'] as const;
const deviceRoles: [Role, string][] = [
  ['hostname', 'Hostname'],
  ['serialNumber', 'Serial number'],
  ['deviceExternalId', 'Device id in the other RMM'],
];
/** Definitions files are sent whole: the server takes up to this many rows per request. */
const maxDefinitionRows = 10_000;

/** One row of the file as the preview and result tables show it. */
interface ShownRow {
  /** 1-based data row of the file. */
  fileRow: number;
  label: string;
  status: string;
  detail: string;
  applied: boolean;
  record: Record<string, unknown>;
}

const number = (n: number) => n.toLocaleString('en');

/** A values row as the wizard lists it: what became of its device, else the most telling status of its values. */
function valuesRowStatus(row: ValuesImportReply['rows'][number]) {
  if (row.deviceId === null) return row.annotation === 'conflict' ? 'ambiguous' : 'no-device';
  if (row.outcome === 'refused' && row.fields.length === 0) return 'refused';
  for (const status of ['invalid', 'no-definition', 'set'] as const)
    if (row.fields.some((field) => field.status === status)) return status;
  return 'unchanged';
}

const fieldText = (field: ValuesImportReply['rows'][number]['fields'][number]) =>
  `${field.key}: ${field.status}${field.reason ? ` (${field.reason})` : ''}`;

export function importWizard({ api, main, report, fail }: PageContext) {
  // Pass 1 comes first: the definitions, then the values that need them.
  let kind: Kind = 'definitions';
  let sourceSystem: string = 'datto-rmm';
  let file: ImportFile | undefined;
  let chunks: Chunk[] = [];
  let columns: Record<string, Role | null> = {};
  let fieldKeys: string[] = [];
  let previews: (ValuesImportReply | DefinitionsImportReply)[] = [];
  let shown: ShownRow[] = [];
  let filter = 'all';
  /** The pass of this preview's commit, and the replies of its requests so far: "Commit again" resumes there. */
  let passId = '';
  let committed: (ValuesImportReply | DefinitionsImportReply)[] = [];

  const stepList = h('ol', { class: 'wizard-steps', 'aria-label': 'Steps' });
  const body = h('section', { class: 'wizard-body', 'aria-live': 'polite' });
  fill(main, h('div', { class: 'workspace wizard' }, h('h2', {}, 'Import custom fields'), stepList, body));

  function show(step: (typeof steps)[number], ...children: (Child | Child[])[]) {
    fill(
      stepList,
      steps.map((name) =>
        h(
          'li',
          {
            class: name === step ? 'wizard-step current' : 'wizard-step',
            'aria-current': name === step ? 'step' : null,
            'data-skipped': kind === 'definitions' && name === 'Map columns' ? 'true' : null,
          },
          name,
        ),
      ),
    );
    fill(body, h('h3', {}, step), ...children);
    report('');
    body.querySelector<HTMLElement>('input, select, button')?.focus();
  }

  const button = (label: string, onclick: () => void, primary = true) =>
    h('button', { type: 'button', class: primary ? 'primary-button' : 'secondary-button', onclick }, label);

  function chooseSource() {
    const radio = (value: Kind, label: string) =>
      h(
        'label',
        { class: 'choice' },
        h('input', {
          type: 'radio',
          name: 'pass',
          value,
          checked: kind === value,
          onchange: () => {
            kind = value;
          },
        }),
        ` ${label}`,
      );
    const select = h(
      'select',
      {
        id: 'source-system',
        onchange: (event: Event) => {
          sourceSystem = (event.target as HTMLSelectElement).value;
        },
      },
      sourceSystems.map(([value, label]) => h('option', { value, selected: value === sourceSystem }, label)),
    );
    show(
      'Source',
      h(
        'fieldset',
        { class: 'wizard-fieldset' },
        h('legend', {}, 'What to import'),
        radio('definitions', 'Field definitions (pass 1: the list of fields)'),
        radio('values', 'Field values (pass 2: one row per device)'),
      ),
      h('p', {}, h('label', { class: 'label', for: 'source-system' }, 'Source system'), ' ', select),
      h('div', { class: 'toolbar' }, button('Next', upload)),
    );
  }

  function upload() {
    const status = h(
      'p',
      { class: 'hint', id: 'file-status' },
      'A CSV file with a header row, or a JSON array of rows.',
    );
    const next = h(
      'button',
      { type: 'button', class: 'primary-button', disabled: true, onclick: () => void mapColumns() },
      'Next',
    );
    const input = h('input', {
      type: 'file',
      id: 'import-file',
      accept: '.csv,.json,text/csv,application/json',
      onchange: async () => {
        const chosen = input.files?.[0];
        if (!chosen) return;
        next.disabled = true;
        try {
          file = await readImportFile(chosen);
          chunks = chunksOf(file.records);
          columns = {};
          if (kind === 'definitions' && file.records.length > maxDefinitionRows)
            throw new Error(`A definitions file holds at most ${number(maxDefinitionRows)} rows`);
          fill(
            status,
            `${file.name}: ${number(file.records.length)} rows, ${file.header.length} columns; SHA-256 ${file.sha256.slice(0, 16)}…`,
          );
          next.disabled = false;
        } catch (error) {
          file = undefined;
          fill(status, '');
          report(`The file could not be read: ${error instanceof Error ? error.message : String(error)}`);
        }
      },
    });
    show(
      'Upload',
      h('p', {}, h('label', { class: 'label', for: 'import-file' }, 'Export file'), ' ', input),
      status,
      h('div', { class: 'toolbar' }, button('Back', chooseSource, false), next),
    );
  }

  async function mapColumns() {
    if (kind === 'definitions') return runPreview();
    const [suggested, definitions] = await Promise.all([
      api.send<ValuesImportReply>('POST', '/custom-fields/import/values/preview', {
        sourceSystem,
        rows: chunks[0]!.rows,
      }),
      api.get<CustomFieldDefinitionPage>('/custom-fields', new URLSearchParams({ limit: '500' })),
    ]).catch((error: unknown) => {
      fail(error);
      return [];
    });
    if (!suggested || !definitions) return;
    fieldKeys = [...new Set(definitions.data.map((field) => field.key))];
    // The server's suggestion, unless the user has mapped this file already (Back from the preview).
    if (Object.keys(columns).length === 0)
      columns = Object.fromEntries(file!.header.map((column) => [column, suggested.columns[column] ?? null]));
    const sample = (column: string) =>
      String(file!.records.find((record) => String(record[column] ?? '').trim() !== '')?.[column] ?? '');
    const rows = file!.header.map((column, i) =>
      h(
        'tr',
        {},
        h('th', { scope: 'row' }, h('label', { for: `column-${i}` }, column)),
        h('td', { class: 'muted' }, sample(column)),
        h(
          'td',
          {},
          h(
            'select',
            {
              id: `column-${i}`,
              onchange: (event: Event) => {
                const value = (event.target as HTMLSelectElement).value;
                columns[column] = value ? (value as Role) : null;
              },
            },
            h('option', { value: '' }, 'Ignore'),
            h(
              'optgroup',
              { label: 'The device' },
              deviceRoles.map(([role, label]) =>
                h('option', { value: role, selected: columns[column] === role }, label),
              ),
            ),
            h(
              'optgroup',
              { label: 'A custom field' },
              fieldKeys.map((key) =>
                h('option', { value: `field:${key}`, selected: columns[column] === `field:${key}` }, key),
              ),
            ),
          ),
        ),
      ),
    );
    show(
      'Map columns',
      h('p', { class: 'hint' }, 'Each column is suggested from its header; change what it is read as, or ignore it.'),
      h(
        'table',
        { class: 'trail wizard-table', 'aria-label': 'Columns' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Column'), h('th', {}, 'First value'), h('th', {}, 'Read as'))),
        h('tbody', {}, rows),
      ),
      h(
        'div',
        { class: 'toolbar' },
        button('Back', upload, false),
        button('Preview', () => void runPreview()),
      ),
    );
  }

  const mapping = () =>
    Object.fromEntries(Object.entries(columns).flatMap(([column, role]) => (role ? [[column, role]] : [])));
  const request = (chunk: Chunk) =>
    kind === 'values'
      ? { sourceSystem, fileName: file!.name, rows: chunk.rows, mapping: mapping() }
      : { sourceSystem, fileName: file!.name, rows: chunk.rows };
  const passPath = () => `/custom-fields/import/${kind}`;

  function progress(label: string, done: number, total: number) {
    return h(
      'div',
      { class: 'wizard-progress' },
      h('label', { for: 'import-progress' }, label),
      h('progress', { id: 'import-progress', max: total, value: done }, `${done} of ${total}`),
    );
  }

  /** The rows of the file with what the server answered for them, request by request. */
  function shownRows(replies: (ValuesImportReply | DefinitionsImportReply)[]): ShownRow[] {
    return replies.flatMap((reply, i) => {
      const chunk = kind === 'values' ? chunks[i]! : { firstRow: 0, rows: file!.records };
      if (kind === 'values')
        return (reply as ValuesImportReply).rows.map((row) => {
          const record = chunk.rows[row.row - 1]!;
          const device = Object.entries(columns).find(([, role]) => role && !role.startsWith('field:'));
          const status = valuesRowStatus(row);
          return {
            fileRow: chunk.firstRow + row.row,
            label: String((device && record[device[0]]) ?? ''),
            status,
            detail: row.reason ?? (row.fields.map(fieldText).join(' · ') || 'No value in this row'),
            applied: status === 'set' || status === 'unchanged',
            record,
          };
        });
      return (reply as DefinitionsImportReply).rows.map((row) => ({
        fileRow: row.row,
        label: row.name ?? '',
        // A conflict or invalid row is refused for that reason; a row refused otherwise changed since preview.
        status:
          row.outcome === 'refused' && ['create', 'update', 'unchanged'].includes(row.annotation)
            ? 'refused'
            : row.annotation,
        detail: [row.key && `${row.key} (${row.type ?? '?'})`, row.reason].filter(Boolean).join(' · '),
        applied: row.outcome !== 'refused' && ['create', 'update', 'unchanged'].includes(row.annotation),
        record: chunk.rows[row.row - 1]!,
      }));
    });
  }

  function summaryOf(replies: (ValuesImportReply | DefinitionsImportReply)[]) {
    const total: Record<string, number> = {};
    for (const reply of replies)
      for (const [status, count] of Object.entries(reply.summary)) total[status] = (total[status] ?? 0) + count;
    return total;
  }

  function counts(summary: Record<string, number>, what: string) {
    return h(
      'dl',
      { class: 'wizard-counts', 'aria-label': `Counts of ${what}` },
      // Each label and its number in one box, so that the grid never pairs a label with its neighbour's number.
      Object.entries(summary).map(([status, count]) =>
        h('div', { class: 'wizard-count' }, h('dt', {}, status), h('dd', { 'data-status': status }, number(count))),
      ),
    );
  }

  function rowsTable(rows: ShownRow[], limit = 500) {
    const statuses = [...new Set(rows.map((row) => row.status))];
    const tableSlot = h('div', { class: 'table-slot' });
    const chips = h('div', { class: 'wizard-filters', role: 'group', 'aria-label': 'Show rows' });
    const draw = () => {
      const visible = rows.filter((row) => filter === 'all' || row.status === filter);
      fill(
        chips,
        ['all', ...statuses].map((status) =>
          h(
            'button',
            {
              type: 'button',
              class: 'secondary-button',
              'aria-pressed': String(filter === status),
              onclick: () => {
                filter = status;
                draw();
              },
            },
            `${status === 'all' ? 'All rows' : status} (${number(status === 'all' ? rows.length : rows.filter((row) => row.status === status).length)})`,
          ),
        ),
      );
      fill(
        tableSlot,
        h(
          'table',
          { class: 'trail wizard-table', 'aria-label': 'Rows' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', {}, 'Row'),
              h('th', {}, kind === 'values' ? 'Device' : 'Field'),
              h('th', {}, 'Status'),
              h('th', {}, 'Detail'),
            ),
          ),
          h(
            'tbody',
            {},
            visible
              .slice(0, limit)
              .map((row) =>
                h(
                  'tr',
                  { 'data-status': row.status },
                  h('td', {}, String(row.fileRow)),
                  h('td', {}, row.label),
                  h('td', {}, h('span', { class: `wizard-status status-${row.status}` }, row.status)),
                  h('td', {}, row.detail),
                ),
              ),
          ),
        ),
        visible.length > limit
          ? h('p', { class: 'hint' }, `Showing the first ${number(limit)} of ${number(visible.length)} rows.`)
          : null,
      );
    };
    filter = 'all';
    draw();
    return [chips, tableSlot];
  }

  async function runPreview() {
    const requests = kind === 'values' ? chunks : [{ firstRow: 0, rows: file!.records }];
    const bar = h('div', {});
    show('Preview', bar);
    previews = [];
    passId = crypto.randomUUID();
    committed = [];
    try {
      for (const [i, chunk] of requests.entries()) {
        fill(
          bar,
          progress(
            `Checking rows ${number(chunk.firstRow + 1)}–${number(chunk.firstRow + chunk.rows.length)}`,
            i,
            requests.length,
          ),
        );
        previews.push(await api.send('POST', `${passPath()}/preview`, request(chunk)));
      }
    } catch (error) {
      fail(error);
      fill(bar, h('div', { class: 'toolbar' }, button('Back', upload, false)));
      return;
    }
    shown = shownRows(previews);
    const summary = summaryOf(previews);
    const pending = kind === 'values' ? (summary.set ?? 0) : (summary.create ?? 0) + (summary.update ?? 0);
    show(
      'Preview',
      h('p', {}, `${file!.name}: ${number(shown.length)} rows. Nothing is stored until you commit.`),
      counts(summary, kind === 'values' ? 'values' : 'fields'),
      ...rowsTable(shown),
      h(
        'div',
        { class: 'toolbar' },
        button('Back', () => void (kind === 'values' ? mapColumns() : upload()), false),
        h(
          'button',
          { type: 'button', class: 'primary-button', disabled: pending === 0, onclick: () => void commit() },
          kind === 'values' ? `Commit ${number(pending)} values` : `Commit ${number(pending)} fields`,
        ),
      ),
    );
  }

  async function commit() {
    const requests = kind === 'values' ? chunks : [{ firstRow: 0, rows: file!.records }];
    const replies = committed;
    const bar = h('div', {});
    show('Commit', bar);
    try {
      for (const [i, chunk] of requests.entries()) {
        if (i < replies.length) continue;
        fill(
          bar,
          progress(
            `Committed ${number(chunk.firstRow)} of ${number(file!.records.length)} rows`,
            chunk.firstRow,
            file!.records.length,
          ),
        );
        const preview = previews[i]!;
        const echoed =
          kind === 'values'
            ? { expected: (preview as ValuesImportReply).rows.map((row) => ({ row: row.row, digest: row.digest })) }
            : {
                acknowledgements: (preview as DefinitionsImportReply).rows.map((row) => ({
                  row: row.row,
                  annotation: row.annotation,
                })),
              };
        const pass =
          kind === 'values'
            ? { pass: { id: passId, sha256: file!.sha256, rows: file!.records.length, firstRow: chunk.firstRow } }
            : {};
        replies.push(await api.send('POST', passPath(), { ...request(chunk), ...pass, ...echoed }));
      }
    } catch (error) {
      fail(error);
      fill(
        bar,
        h(
          'p',
          {},
          `Stopped after ${number(replies.length)} of ${number(requests.length)} requests. Committing again resumes: what was written reads unchanged.`,
        ),
        h(
          'div',
          { class: 'toolbar' },
          button('Commit again', () => void commit()),
        ),
      );
      return;
    }
    result(replies);
  }

  function result(replies: (ValuesImportReply | DefinitionsImportReply)[]) {
    const rows = shownRows(replies);
    const notApplied = rows.filter((row) => !row.applied);
    const download = () => {
      const csv = toCsv(
        ['row', 'status', 'reason', ...file!.header],
        notApplied.map((row) => [
          row.fileRow,
          row.status,
          row.detail,
          ...file!.header.map((column) => row.record[column]),
        ]),
      );
      const link = h('a', {
        href: URL.createObjectURL(new Blob([csv], { type: 'text/csv' })),
        download: `${file!.name.replace(/\.[^.]+$/, '')}-not-applied.csv`,
      });
      document.body.append(link);
      link.click();
      link.remove();
    };
    const total = file!.records.length;
    show(
      'Result',
      progress(`Committed ${number(total)} of ${number(total)} rows`, total, total),
      h(
        'p',
        { class: 'wizard-done' },
        `Committed ${file!.name}: ${number(rows.length - notApplied.length)} rows applied in full, ${number(notApplied.length)} not applied (or only in part: see each row).`,
      ),
      counts(summaryOf(replies), kind === 'values' ? 'values' : 'fields'),
      notApplied.length > 0
        ? button(
            `Download the ${notApplied.length === 1 ? 'row' : `${number(notApplied.length)} rows`} not applied (CSV)`,
            download,
            false,
          )
        : null,
      ...rowsTable(rows),
      h('div', { class: 'toolbar' }, button('Start another import', chooseSource)),
    );
  }

  chooseSource();
}
