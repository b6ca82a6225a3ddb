import type { Strings } from "../../strings/index.ts";

/**
 * The session page's words, in the bot's language: the server writes the locale's `web` strings (and the
 * card's status words) into the page as JSON (web/page-strings.ts), so the browser gets one catalogue, not
 * both, and the text is there before the script asks for anything. Types only from strings/index.ts:
 * nothing of the catalogues is bundled into the script.
 */

export type PageStrings = Strings["web"] & {
  status: Readonly<Record<string, string>>;
  /** The card's words for what the page offers too (延长, 取消任务 and its confirmation), one owner. */
  actions: PageActions;
};

/** `{time}` is filled in by the page, in its viewer's own zone. */
export interface PageActions {
  deadline: string;
  extend: string;
  extended: string;
  extendLimit: string;
  cancelTask: string;
  confirmTitle: string;
  confirmText: string;
  taskCancelled: string;
  taskNotRunning: string;
  decline: string;
  declined: string;
}

/** The `<script type="application/json">` element that carries them (a data block: CSP does not run it). */
export const PAGE_STRINGS_ID = "page-strings";

/** `{name}` slots of a page string filled in; a slot without a value is left as written, visibly. */
export function fill(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(values, name) ? String(values[name]) : whole,
  );
}

/**
 * The page's strings from the text of their block; a page without them (or with a broken block) cannot say
 * anything, so it throws. No DOM here: the server's tests read a rendered page with it too.
 */
export function parsePageStrings(json: string): PageStrings {
  const parsed: unknown = JSON.parse(json);
  if (!isPageStrings(parsed)) throw new Error("session page: the page's strings are missing or malformed");
  return parsed;
}

const SECTIONS = [
  "page",
  "errors",
  "asks",
  "panel",
  "run",
  "permissions",
  "icons",
  "status",
  "actions",
] as const;

function isPageStrings(value: unknown): value is PageStrings {
  if (!isRecord(value) || typeof value.lang !== "string") return false;
  return SECTIONS.every((name) => {
    const section = value[name];
    return isRecord(section) && Object.values(section).every((text) => typeof text === "string");
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
