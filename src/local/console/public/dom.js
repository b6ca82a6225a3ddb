/**
 * A tiny element builder. Text goes in as text nodes, never parsed as HTML; the only HTML the console
 * inserts comes from markdownToHtml, which escapes everything it is given.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") element.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    else if (key === "text") element.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function")
      element.addEventListener(key.slice(2).toLowerCase(), value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

export function append(element, children) {
  for (const child of children.flat(Number.POSITIVE_INFINITY)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function clear(element) {
  while (element.firstChild) element.firstChild.remove();
  return element;
}

/** Markup made by markdownToHtml only. */
export function setSafeHtml(element, html) {
  element.innerHTML = html;
  return element;
}
