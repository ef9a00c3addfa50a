/**
 * Builds DOM elements from values. Text always becomes Text nodes and attributes go through setAttribute:
 * audit rows hold what callers sent (names, user agents, details), so nothing here ever parses HTML.
 */
export type Child = Node | string | number | null | undefined | false;
type Listener = (event: Event) => void;
export type Props = Record<string, string | number | boolean | Listener | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children.flat());
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(
      typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child,
    );
  }
}

/** Replaces an element's children. */
export function fill(parent: Element, ...children: (Child | Child[])[]): void {
  parent.replaceChildren();
  append(parent, children.flat());
}
