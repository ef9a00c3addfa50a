import { actorLines, actorTypeLabel } from '../actors.ts';
import { type Child, h } from '../element.ts';
import { changedFields, type Row } from '../entries.ts';
import { codeWords, humanizeAction } from '../humanize.ts';
import { localTimeLong } from '../time.ts';
import { resultBadge } from './trail-table.ts';

function changesTable(row: Row) {
  const fields = changedFields(row.changes);
  if (fields.length === 0) return h('p', { class: 'muted' }, 'This entry records no before/after values.');
  return h(
    'table',
    { class: 'diff' },
    h('caption', { class: 'visually-hidden' }, 'Changes: each field before and after'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'Field'),
        h('th', { scope: 'col' }, 'Before'),
        h('th', { scope: 'col' }, 'After'),
      ),
    ),
    h(
      'tbody',
      {},
      fields.map((field) =>
        h(
          'tr',
          { class: `diff-${field.kind}` },
          h('th', { scope: 'row' }, field.field, h('span', { class: 'visually-hidden' }, ` (${field.kind})`)),
          h(
            'td',
            { class: 'before' },
            field.before === '' ? h('span', { class: 'muted' }, '—') : h('del', {}, field.before),
          ),
          h(
            'td',
            { class: 'after' },
            field.after === '' ? h('span', { class: 'muted' }, '—') : h('ins', {}, field.after),
          ),
        ),
      ),
    ),
  );
}

type Fact = [term: string, value: Child | Child[]];

function facts(pairs: (Fact | false)[]) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.flatMap((pair) => (pair ? [h('dt', {}, pair[0]), h('dd', {}, pair[1])] : [])),
  );
}

const secondLine = (text: string): Child[] => (text ? [h('br'), h('span', { class: 'muted' }, text)] : []);

export interface EntryDetailOptions {
  orgName: (orgId: string) => string;
  onClose(): void;
  /** Set while the full entry is read; the list's values are shown meanwhile. */
  loading?: boolean;
  error?: string;
}

/** The detail panel of one entry: who did what to which resource, the before/after as a diff, the raw details. */
export function entryDetail(row: Row, options: EntryDetailOptions) {
  const actor = actorLines(row);
  const closeButton = h(
    'button',
    { type: 'button', class: 'close', onclick: options.onClose },
    h('span', { 'aria-hidden': 'true' }, '×'),
    h('span', { class: 'visually-hidden' }, 'Close the details'),
  );
  return h(
    'div',
    { class: 'detail-body' },
    h(
      'header',
      { class: 'detail-head' },
      h('h2', { id: 'detail-title', tabindex: '-1' }, humanizeAction(row.action)),
      closeButton,
      h('p', { class: 'detail-code' }, h('code', {}, row.action), ` · ${row.category}`),
      h(
        'p',
        {},
        resultBadge(row.result),
        row.errorMessage ? h('span', { class: 'error-message' }, ` ${row.errorMessage}`) : null,
      ),
    ),
    options.error ? h('p', { class: 'notice notice-error' }, options.error) : null,
    options.loading ? h('p', { class: 'muted' }, 'Reading the full entry…') : null,
    facts([
      ['When', [localTimeLong(row.timestamp), h('br'), h('code', {}, row.timestamp)]],
      [
        'Actor',
        [
          actor.primary,
          ...secondLine(actor.secondary),
          ...secondLine(row.actor.role && `role: ${codeWords(row.actor.role)}`),
        ],
      ],
      ['Actor type', actorTypeLabel(row)],
      [
        'Resource',
        [
          row.resource.name || '—',
          row.resource.type ? h('span', { class: 'muted' }, ` (${codeWords(row.resource.type)})`) : null,
        ],
      ],
      Boolean(row.resource.id) && ['Resource id', h('code', {}, row.resource.id ?? '')],
      ['Organization', options.orgName(row.orgId)],
      ['IP address', row.ipAddress || '—'],
      ['User agent', row.userAgent || '—'],
      ['Chain position', `seq ${row.seq}`],
      ['Entry id', h('code', {}, row.id)],
    ]),
    h('h3', {}, 'Changes'),
    changesTable(row),
    h('h3', {}, 'Raw details'),
    h(
      'pre',
      { class: 'raw', tabindex: '0', 'aria-label': 'Raw details as JSON' },
      JSON.stringify(row.details, null, 2),
    ),
  );
}
