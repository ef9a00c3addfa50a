import { actorLines, resultLabels } from '../actors.ts';
import { type Child, h } from '../element.ts';
import type { Row } from '../entries.ts';
import { codeWords, humanizeAction } from '../humanize.ts';
import { localTime } from '../time.ts';

export interface TrailTableOptions {
  /** Present when the reader sees more than one organization: adds its column. */
  orgName?: (orgId: string) => string;
  selectedId: string;
  onOpen(row: Row): void;
}

const resultMarks: Record<Row['result'], string> = { success: '✓', failure: '✕', denied: '⊘' };

export function resultBadge(result: Row['result']) {
  return h(
    'span',
    { class: `result result-${result}` },
    h('span', { 'aria-hidden': 'true' }, resultMarks[result]),
    ' ',
    resultLabels[result],
  );
}

function timeElement(iso: string) {
  return h('time', { datetime: iso, title: iso }, localTime(iso));
}

/** Text that a narrow column wraps at its parts, after an @ and before a dot (an e-mail, a hostname), not mid-word. */
function wrappable(text: string): Child[] {
  const pieces: Child[] = [];
  let start = 0;
  for (let i = 1; i < text.length; i++) {
    if (text[i] !== '.' && text[i - 1] !== '@') continue;
    pieces.push(text.slice(start, i), h('wbr'));
    start = i;
  }
  pieces.push(text.slice(start));
  return pieces;
}

function twoLines(primary: string, secondary: string) {
  return [
    h('span', { class: 'primary' }, wrappable(primary)),
    secondary ? h('span', { class: 'secondary' }, wrappable(secondary)) : null,
  ];
}

function actionCell(row: Row, options: TrailTableOptions) {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'open-entry',
      title: `${row.action}: show the details`,
      'aria-controls': 'detail',
      onclick: () => options.onOpen(row),
    },
    humanizeAction(row.action),
  );
  return h('td', { 'data-label': 'Action' }, button);
}

function rowElement(row: Row, options: TrailTableOptions) {
  const actor = actorLines(row);
  const tr = h(
    'tr',
    {
      class: `result-row-${row.result}${row.id === options.selectedId ? ' selected' : ''}`,
      'data-id': row.id,
      'data-actor-type': row.actorType,
    },
    h('td', { 'data-label': 'Time', class: 'time' }, timeElement(row.timestamp)),
    options.orgName ? h('td', { 'data-label': 'Organization' }, options.orgName(row.orgId)) : null,
    h('td', { 'data-label': 'Actor', class: `actor actor-${row.actorType}` }, twoLines(actor.primary, actor.secondary)),
    actionCell(row, options),
    h(
      'td',
      { 'data-label': 'Resource', class: 'resource' },
      twoLines(row.resource.name || '—', codeWords(row.resource.type)),
    ),
    h('td', { 'data-label': 'Result' }, resultBadge(row.result)),
    h('td', { 'data-label': 'IP address', class: 'ip' }, row.ipAddress || '—'),
  );
  // The whole row opens the entry for a pointer; the keyboard uses the action's button.
  tr.addEventListener('click', (event) => {
    if (!(event.target instanceof Element) || !event.target.closest('button, a')) options.onOpen(row);
  });
  return tr;
}

export function trailTable(rows: Row[], options: TrailTableOptions) {
  const headers = [
    'Time',
    options.orgName ? 'Organization' : null,
    'Actor',
    'Action',
    'Resource',
    'Result',
    'IP address',
  ].filter((name): name is string => name !== null);
  return h(
    'table',
    { class: 'trail' },
    h(
      'caption',
      { class: 'visually-hidden' },
      'Audit log entries, newest first. Choose an action to see the entry in detail.',
    ),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((row) => rowElement(row, options)),
    ),
  );
}
