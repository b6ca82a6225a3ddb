import { EXTEND_MINUTES } from "../asks/person-actions.ts";
import type { Strings } from "../strings/index.ts";
import { escapeHtml } from "./auth.ts";
import { PAGE_STRINGS_ID, type PageActions, type PageStrings } from "./public/page-text.ts";

/**
 * The session page in the bot's language. public/session.html is a template: `{{page.title}}` and the like
 * name a string of the catalogue's `web` table (HTML-escaped where they stand), and its empty strings block
 * (`<script type="application/json" id="page-strings">null</script>`) gets the page's strings as JSON for its
 * script. Its comments are for its readers (and Biome) and are not sent. Rendered once per locale by
 * session-page.ts.
 */

const EMPTY_BLOCK = `<script type="application/json" id="${PAGE_STRINGS_ID}">null</script>`;

/** What the page's script gets: the `web` table and the card's words for a run's status and buttons (one owner). */
export function pageStrings(table: Strings): PageStrings {
  const actions: PageActions = {
    deadline: table.asks.deadline("{time}"),
    extend: table.asks.extend(EXTEND_MINUTES),
    extended: table.asks.extended("{time}"),
    extendLimit: table.asks.extendLimit,
    cancelTask: table.card.cancelTask,
    confirmTitle: table.card.cancelConfirmTitle,
    confirmText: table.card.cancelConfirmText,
    taskCancelled: table.feishu.taskCancelled,
    taskNotRunning: table.feishu.taskNotRunning,
    decline: table.card.declineAsk,
    declined: table.feishu.askDeclined,
  };
  return { ...table.web, status: { ...table.card.status }, actions };
}

/**
 * JSON that is safe inside `<script>`: `<` `>` `&` escaped (no `</script>` or `<!--` can end or bend the
 * block), and U+2028/U+2029, which older parsers took for line ends.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

export function renderPage(template: string, table: Strings): string {
  const [before, after, ...more] = template.split(EMPTY_BLOCK);
  // The template is ours: a missing block or a name not in the catalogue is a bug to see at once.
  if (before === undefined || after === undefined || more.length > 0)
    throw new Error(`session.html: expected one ${EMPTY_BLOCK}`);
  const block = EMPTY_BLOCK.replace(">null<", `>${scriptJson(pageStrings(table))}<`);
  return [before, after].map((part) => fill(part, table)).join(block);
}

function fill(part: string, table: Strings): string {
  return part.replace(/<!--[\s\S]*?-->\n?/g, "").replace(/\{\{([\w.]+)\}\}/g, (_whole, name: string) => {
    const text = lookup(table.web, name.split("."));
    if (typeof text !== "string") throw new Error(`session.html: no web string "${name}" in the catalogue`);
    return escapeHtml(text);
  });
}

function lookup(table: unknown, path: readonly string[]): unknown {
  let node = table;
  for (const key of path) {
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, key)) return undefined;
    node = Reflect.get(node, key);
  }
  return node;
}
