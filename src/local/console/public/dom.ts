/**
 * A tiny element builder. Text goes in as text nodes, never parsed as HTML; the only HTML the console
 * inserts comes from markdownToHtml, which escapes everything it is given.
 */
/** A child as `h` and `append` take it: nodes, text, nothing (skipped), or nested lists of those. */
export type Child = Node | string | number | null | undefined | false | readonly Child[];
export type Props = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class")
      element.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : String(value);
    else if (key === "text") element.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function")
      element.addEventListener(key.slice(2).toLowerCase(), value as EventListener);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

export function append<E extends Element>(element: E, children: readonly Child[]): E {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function clear<E extends Element>(element: E): E {
  while (element.firstChild) element.firstChild.remove();
  return element;
}

/** Markup made by markdownToHtml only. */
export function setSafeHtml<E extends Element>(element: E, html: string): E {
  element.innerHTML = html;
  return element;
}
