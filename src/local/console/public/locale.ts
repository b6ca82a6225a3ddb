import { CONSOLE_WORDS, type ConsoleLocale, LOCALE_EVENT, setConsoleLocale } from "./words.ts";

/** The DOM half of words.ts (which Node tests import, so it touches no document). */

/**
 * Switches the console's language: `<html lang>` and the page's static labels (index.html's `data-words`,
 * `data-words-title`, `data-words-label` attributes name a plain string of the table), and an event the
 * agent panel (its own script) redraws on.
 */
export function applyConsoleLocale(locale: ConsoleLocale, doc: Document): void {
  setConsoleLocale(locale);
  const table = CONSOLE_WORDS[locale];
  doc.documentElement.lang = table.htmlLang;
  doc.title = table.pageTitle;
  const text = (name: string | undefined): string | undefined => {
    const value = name === undefined ? undefined : (table as Record<string, unknown>)[name];
    return typeof value === "string" ? value : undefined;
  };
  for (const element of doc.querySelectorAll<HTMLElement>("[data-words]")) {
    const value = text(element.dataset.words);
    if (value !== undefined) element.textContent = value;
  }
  for (const element of doc.querySelectorAll<HTMLElement>("[data-words-title]")) {
    const value = text(element.dataset.wordsTitle);
    if (value !== undefined) element.title = value;
  }
  for (const element of doc.querySelectorAll<HTMLElement>("[data-words-label]")) {
    const value = text(element.dataset.wordsLabel);
    if (value !== undefined) element.setAttribute("aria-label", value);
  }
  doc.dispatchEvent(new CustomEvent(LOCALE_EVENT, { detail: locale }));
}
