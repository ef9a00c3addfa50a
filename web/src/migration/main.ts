/**
 * The Migration page: per organization, enrollment progress against the other RMM's device list, the management
 * posture (where the old agents still run), the devices behind each figure, and the deployment script of a key.
 * The organization and the staleness window are kept in the address (?org=&staleDays=).
 */
import { fill, h } from '../element.ts';
import { type PageContext, startPage } from '../page-shell.ts';
import { organizationSelect, reachableOrganizations } from '../views/organizations.ts';
import { showProgress, showScripts } from './enrollment.ts';
import { showPosture } from './posture.ts';

/** The report's default window (shared/posture/schemas.ts). */
const defaultStaleDays = 7;

interface Organization {
  id: string;
  name: string;
}

async function render({ api, main, report, fail }: PageContext) {
  const organizations = await reachableOrganizations<Organization>(api, main);
  if (!organizations) return;
  const address = new URLSearchParams(location.search);
  const chosen = organizations.find((o) => o.id === address.get('org')) ?? organizations[0]!;
  const orgSelect = organizationSelect(organizations, chosen.id);
  const staleInput = h('input', {
    id: 'stale-days',
    name: 'staleDays',
    type: 'number',
    min: 1,
    max: 365,
    value: staleWindow(address.get('staleDays') ?? '') ?? defaultStaleDays,
    'aria-describedby': 'alert',
  });
  const progress = h('div', { class: 'slot', id: 'progress' });
  const posture = h('div', { class: 'slot', id: 'posture' });
  const scripts = h('div', { class: 'slot', id: 'scripts' });

  const show = () => {
    const staleDays = staleWindow(staleInput.value);
    staleInput.setAttribute('aria-invalid', String(staleDays === undefined));
    if (staleDays === undefined) {
      report(
        `Stale after takes a whole number of days from 1 to 365; "${staleInput.value}" is not one. The report still shows the last valid window.`,
      );
      return;
    }
    report('');
    const orgId = orgSelect.value;
    history.replaceState(null, '', `?${new URLSearchParams({ org: orgId, staleDays: String(staleDays) })}`);
    for (const part of [
      showProgress(api, progress, orgId),
      showPosture(api, posture, orgId, staleDays),
      showScripts(api, scripts, orgId),
    ])
      part.catch(fail);
  };
  orgSelect.addEventListener('change', show);
  staleInput.addEventListener('change', show);

  fill(
    main,
    h(
      'div',
      { class: 'migration' },
      h(
        'form',
        { class: 'filters migration-filters', onsubmit: (event: Event) => event.preventDefault() },
        h('label', { class: 'field' }, h('span', { class: 'label' }, 'Organization'), orgSelect),
        h('label', { class: 'field' }, h('span', { class: 'label' }, 'Stale after (days)'), staleInput),
      ),
      h(
        'section',
        { class: 'panel', tabindex: 0, 'aria-labelledby': 'progress-title' },
        h('h2', { id: 'progress-title' }, 'Enrollment progress'),
        progress,
      ),
      h(
        'section',
        { class: 'panel', tabindex: 0, 'aria-labelledby': 'posture-title' },
        h('h2', { id: 'posture-title' }, 'Management posture'),
        posture,
      ),
      h(
        'section',
        { class: 'panel', tabindex: 0, 'aria-labelledby': 'scripts-title' },
        h('h2', { id: 'scripts-title' }, 'Deployment script'),
        scripts,
      ),
    ),
  );
  show();
}

/** A staleness window as typed: a whole number of days from 1 to 365, else undefined. */
function staleWindow(text: string): number | undefined {
  const days = Number(text.trim());
  return text.trim() !== '' && Number.isInteger(days) && days >= 1 && days <= 365 ? days : undefined;
}

startPage('migration.html', render);
