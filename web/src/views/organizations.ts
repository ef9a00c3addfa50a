import type { ApiClient } from '../api.ts';
import { fill, h } from '../element.ts';

/**
 * The organizations the caller reaches (the first 100), saying so in `main` while they load; undefined, with "No
 * organization to show." in `main`, when there is none.
 */
export async function reachableOrganizations<T extends { id: string; name: string }>(
  api: ApiClient,
  main: HTMLElement,
): Promise<T[] | undefined> {
  fill(main, h('p', { class: 'muted', role: 'status' }, 'Loading the organizations…'));
  const { data } = await api.get<{ data: T[] }>('/orgs/organizations', new URLSearchParams({ limit: '100' }));
  if (data.length > 0) return data;
  fill(main, h('p', { class: 'empty' }, 'No organization to show.'));
  return undefined;
}

/** A page's choice of organization (id and name `org`), `chosenId` selected. */
export function organizationSelect(organizations: { id: string; name: string }[], chosenId: string) {
  return h(
    'select',
    { id: 'org', name: 'org' },
    organizations.map((o) => h('option', { value: o.id, selected: o.id === chosenId }, o.name)),
  );
}
