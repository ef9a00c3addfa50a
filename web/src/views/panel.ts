import { type Child, h } from '../element.ts';

/** A section of a page: a panel titled by its heading (`id`), which names it for assistive technology. */
export function titledPanel(id: string, title: string, ...content: Child[]): HTMLElement {
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...content);
}
