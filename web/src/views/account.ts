import { h } from '../element.ts';
import { codeWords } from '../humanize.ts';
import type { Claims } from '../session.ts';

/** Who is signed in (name, else e-mail) with their role, and the Sign out button. */
export function accountBar(claims: Claims, onSignOut: () => void) {
  const { name, email, role } = claims;
  return [
    h(
      'span',
      { class: 'who' },
      name || email || 'Signed in',
      role ? h('span', { class: 'secondary' }, ` ${codeWords(role)}`) : null,
    ),
    h('button', { type: 'button', class: 'secondary-button', onclick: onSignOut }, 'Sign out'),
  ];
}
