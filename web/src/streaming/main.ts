/**
 * The Streaming page: the destinations the caller sends the audit trail (and device event and agent logs) to, each
 * with its state, its lag and last error per organization and stream, and a "send a test record" button that shows
 * the record as the destination's format renders it; and the outside witness of an organization's chain (the last
 * anchor published, its age). The organization of the witness is kept in the address (?org=).
 */
import { type ApiClient, ApiError } from '../api.ts';
import { fill, h } from '../element.ts';
import { type PageContext, startPage } from '../page-shell.ts';
import { localTime } from '../time.ts';
import { organizationSelect, reachableOrganizations } from '../views/organizations.ts';

interface Organization {
  id: string;
  name: string;
}
interface Destination {
  id: string;
  name: string;
  type: string;
  format: string;
  endpoint: string;
  availability: 'organization' | 'partner';
  orgId: string | null;
  streams: string[];
}
interface Cursor {
  lastDeliveredSeq: number;
  lastDeliveredAt: string | null;
  lagRows: number;
  lagSeconds: number;
  nextAttemptAt: string | null;
  lastError?: string;
}
interface OrganizationStatus extends Cursor {
  orgId: string;
  streams?: (Cursor & { stream: string })[];
}
interface TestReply {
  format: string;
  line: string;
  delivered: boolean;
  error?: string;
}
interface Witness {
  location: string | null;
  anchors: { seq: number; anchoredAt: string; keyId: string }[];
  lastPublishedAt: string | null;
  ageSeconds: number | null;
}

const streamNames: Record<string, string> = {
  audit: 'Audit trail',
  'device-events': 'Device event logs',
  'agent-logs': 'Agent diagnostic logs',
};

/** A duration in words: seconds, minutes, hours or days, whichever reads best. */
function age(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

/** A state in words and colour: failing (an error), behind (rows waiting), up to date. */
function stateOf(cursors: Cursor[]): { kind: 'failing' | 'behind' | 'current'; text: string } {
  if (cursors.some((cursor) => cursor.lastError)) return { kind: 'failing', text: 'failing' };
  if (cursors.some((cursor) => cursor.lagRows > 0)) return { kind: 'behind', text: 'catching up' };
  return { kind: 'current', text: 'up to date' };
}
/** The state's badge, in the colours of the Alerts page's badges (failing as critical, catching up as medium). */
const badgeColours = { failing: 'critical', behind: 'medium', current: 'resolved' } as const;
const badge = (kind: keyof typeof badgeColours, text: string) =>
  h('span', { class: `stream-state alert-badge alert-badge-${badgeColours[kind]}` }, text);

/** The cursors of an organization's status, one per stream the destination receives. */
const cursorsOf = (status: OrganizationStatus) => status.streams ?? [{ stream: 'audit', ...status }];

function statusTable(destination: Destination, statuses: OrganizationStatus[], orgName: Map<string, string>) {
  const rows = statuses.flatMap((status) => cursorsOf(status).map((cursor) => ({ orgId: status.orgId, ...cursor })));
  if (rows.length === 0) return h('p', { class: 'empty' }, 'It serves no organization yet.');
  return h(
    'div',
    {
      class: 'table-slot',
      tabindex: '0',
      role: 'region',
      'aria-label': `Where ${destination.name} stands, per organization and stream`,
    },
    h(
      'table',
      { class: 'trail stream-status' },
      h('caption', { class: 'visually-hidden' }, `Where ${destination.name} stands`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Organization', 'Stream', 'Last delivered', 'Lag', 'Last error'].map((title) =>
            h('th', { scope: 'col' }, title),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((row) =>
          h(
            'tr',
            { 'data-org': row.orgId, 'data-stream': row.stream },
            h('td', {}, orgName.get(row.orgId) ?? row.orgId),
            h('td', {}, streamNames[row.stream] ?? row.stream),
            h(
              'td',
              { class: 'time' },
              `#${row.lastDeliveredSeq}`,
              row.lastDeliveredAt ? h('span', { class: 'secondary' }, localTime(row.lastDeliveredAt)) : null,
            ),
            h(
              'td',
              { class: 'stream-lag' },
              row.lagRows === 0 ? 'none' : `${row.lagRows} rows, ${age(row.lagSeconds)}`,
            ),
            h(
              'td',
              { class: 'stream-error' },
              row.lastError ?? '',
              row.lastError && row.nextAttemptAt
                ? h('span', { class: 'secondary' }, `next attempt ${localTime(row.nextAttemptAt)}`)
                : null,
            ),
          ),
        ),
      ),
    ),
  );
}

async function showDestination(
  api: ApiClient,
  card: HTMLElement,
  destination: Destination,
  orgName: Map<string, string>,
  fail: (error: unknown) => void,
) {
  const { organizations } = await api.get<{ organizations: OrganizationStatus[] }>(
    `/audit-streams/${destination.id}/status`,
  );
  const state = stateOf(organizations.flatMap(cursorsOf));
  const titleId = `destination-${destination.id}`;
  const outcome = h('div', { class: 'slot test-outcome', role: 'status', 'aria-live': 'polite' });
  const sendTest = async () => {
    fill(outcome, h('p', { class: 'muted' }, 'Sending a test record…'));
    const reply = await api.send<TestReply>('POST', `/audit-streams/${destination.id}/test`);
    fill(
      outcome,
      h(
        'p',
        { class: reply.delivered ? 'notice' : 'notice notice-error' },
        reply.delivered ? 'The receiver took the test record.' : `The receiver did not take it: ${reply.error}`,
      ),
      h('p', { class: 'label' }, `Rendered as ${reply.format}:`),
      h(
        'pre',
        { class: 'rendered-line', tabindex: '0', 'aria-label': `The test record as ${reply.format}` },
        reply.line,
      ),
    );
  };
  fill(
    card,
    h('div', { class: 'destination-head' }, h('h3', { id: titleId }, destination.name), badge(state.kind, state.text)),
    h(
      'p',
      { class: 'muted destination-facts' },
      `${destination.type}, ${destination.format} → ${destination.endpoint}. `,
      destination.availability === 'partner'
        ? 'Every organization of the partner. '
        : `${orgName.get(destination.orgId ?? '') ?? 'One organization'}. `,
      `Streams: ${destination.streams.map((stream) => streamNames[stream] ?? stream).join(', ')}.`,
    ),
    statusTable(destination, organizations, orgName),
    h(
      'div',
      { class: 'toolbar' },
      h(
        'button',
        {
          type: 'button',
          class: 'secondary-button',
          'aria-describedby': titleId,
          onclick: () => sendTest().catch(fail),
        },
        'Send a test record',
      ),
    ),
    outcome,
  );
}

async function showDestinations(
  api: ApiClient,
  slot: HTMLElement,
  orgName: Map<string, string>,
  fail: PageContext['fail'],
) {
  slot.setAttribute('aria-busy', 'true');
  let destinations: Destination[];
  try {
    destinations = (await api.get<{ data: Destination[] }>('/audit-streams', new URLSearchParams({ limit: '200' })))
      .data;
  } catch (error) {
    slot.removeAttribute('aria-busy');
    if (error instanceof ApiError && error.status === 403) {
      fill(slot, h('p', { class: 'empty' }, 'Managing destinations takes the audit:manage permission.'));
      return;
    }
    throw error;
  }
  slot.removeAttribute('aria-busy');
  if (destinations.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'Nothing is streamed yet: no destination exists.'));
    return;
  }
  const cards = destinations.map((destination) =>
    h(
      'li',
      { class: 'destination', 'data-destination': destination.id },
      h('p', { class: 'muted', role: 'status' }, `Loading ${destination.name}…`),
    ),
  );
  fill(slot, h('ul', { class: 'destinations' }, cards));
  await Promise.all(
    destinations.map((destination, n) => showDestination(api, cards[n]!, destination, orgName, fail).catch(fail)),
  );
}

async function showWitness(api: ApiClient, slot: HTMLElement, orgId: string) {
  const witness = await api.get<Witness>('/audit-logs/witness', new URLSearchParams({ orgId }));
  const last = witness.anchors[0];
  const facts: [string, string][] = [
    ['Witness', witness.location ?? 'none configured'],
    [
      'Last anchor published',
      last && witness.lastPublishedAt
        ? `seq ${last.seq}, ${localTime(witness.lastPublishedAt)} (key ${last.keyId})`
        : 'none yet',
    ],
    ['Its age', witness.ageSeconds === null ? '—' : age(witness.ageSeconds)],
    ['Anchors witnessed', String(witness.anchors.length)],
  ];
  fill(
    slot,
    h(
      'dl',
      { class: 'alert-facts witness-facts' },
      facts.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
    ),
  );
}

async function render({ api, main, fail }: PageContext) {
  const organizations = await reachableOrganizations<Organization>(api, main);
  if (!organizations) return;
  const orgName = new Map(organizations.map((o) => [o.id, o.name]));
  const address = new URLSearchParams(location.search);
  const chosen = organizations.find((o) => o.id === address.get('org')) ?? organizations[0]!;
  const orgSelect = organizationSelect(organizations, chosen.id);
  const destinations = h('div', { class: 'slot', id: 'destinations' });
  const witness = h('div', { class: 'slot', id: 'witness', 'aria-live': 'polite' });
  const showWitnessOf = () => showWitness(api, witness, orgSelect.value).catch(fail);
  orgSelect.addEventListener('change', () => {
    history.replaceState(null, '', `?${new URLSearchParams({ org: orgSelect.value })}`);
    showWitnessOf();
  });
  fill(
    main,
    h(
      'div',
      { class: 'streaming-page' },
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'destinations-title' },
        h(
          'div',
          { class: 'toolbar' },
          h('h2', { id: 'destinations-title' }, 'Destinations'),
          h(
            'button',
            {
              type: 'button',
              class: 'secondary-button',
              onclick: () => showDestinations(api, destinations, orgName, fail).catch(fail),
            },
            'Refresh',
          ),
        ),
        destinations,
      ),
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'witness-title' },
        h('h2', { id: 'witness-title' }, 'Outside witness'),
        h(
          'form',
          { class: 'filters', onsubmit: (event: Event) => event.preventDefault() },
          h('label', { class: 'field' }, h('span', { class: 'label' }, 'Organization'), orgSelect),
        ),
        witness,
      ),
    ),
  );
  showDestinations(api, destinations, orgName, fail).catch(fail);
  showWitnessOf();
}

startPage('streaming.html', render);
