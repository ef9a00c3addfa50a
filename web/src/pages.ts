import { h } from './element.ts';

/** The site's pages, in the order the header lists them. A page adds itself here and to `sitePages` in build.ts. */
const pages = [
  { href: 'index.html', label: 'Audit log' },
  { href: 'custom-fields-import.html', label: 'Import custom fields' },
  { href: 'migration.html', label: 'Migration' },
  { href: 'invoices.html', label: 'Invoices' },
  { href: 'devices.html', label: 'Devices' },
  { href: 'alerts.html', label: 'Alerts' },
  { href: 'automations.html', label: 'Automations' },
  { href: 'streaming.html', label: 'Streaming' },
  { href: 'patching.html', label: 'Patching' },
] as const;

/** The header's links between pages; the current one is marked for assistive technology. */
export function pageNav(current: string) {
  return h(
    'nav',
    { class: 'pages', 'aria-label': 'Pages' },
    pages.map((page) =>
      h(
        'a',
        { href: page.href, class: 'page-link', 'aria-current': page.href === current ? 'page' : null },
        page.label,
      ),
    ),
  );
}
