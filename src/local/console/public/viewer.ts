/**
 * The console's viewer: the 中文/English choice (saved in this browser, else the bot's language) and the labels
 * and switch that show it, and the session pages' sign-in cookie, kept on the console's current user.
 */
import { els, state, toast } from "./console-state.ts";
import { applyConsoleLocale } from "./locale.ts";
import { type ConsoleLocale, isConsoleLocale, words } from "./words.ts";

const LOCALE_KEY = "fpb-console-locale";

/** Signs this origin in as `userId` (the same cookie /auth/local sets for a session page). */
export async function followUser(userId: string): Promise<boolean> {
  const response = await fetch(`/auth/local?user=${encodeURIComponent(userId)}&next=/auth/me`, {
    credentials: "same-origin",
    cache: "no-store",
  });
  return response.ok;
}

/** The viewer's saved 中文/English choice, if they made one; without it the console speaks the bot's language. */
export function savedLocale(): ConsoleLocale | undefined {
  try {
    const saved = localStorage.getItem(LOCALE_KEY);
    return isConsoleLocale(saved) ? saved : undefined;
  } catch (error) {
    console.warn("localStorage unavailable; the console reads cards in the bot's language", error);
    return undefined;
  }
}

/** Keeps the viewer's language choice for the next visit; a browser without storage only loses that. */
export function saveLocale(locale: ConsoleLocale): void {
  try {
    localStorage.setItem(LOCALE_KEY, locale);
  } catch (error) {
    console.warn("could not keep the language choice", error);
  }
}

/** The console's own labels and the switch in the current language. */
export function showLocale(): void {
  applyConsoleLocale(state.locale, document);
  const w = words();
  els.language.textContent = w.languageName;
  els.language.dataset.locale = state.locale;
  els.language.title = w.languageTitle;
  if (els.conn.dataset.state === "open") els.conn.textContent = w.connected;
  else if (els.conn.dataset.state === "retrying") els.conn.textContent = w.reconnecting;
}

/** Keeps the session pages' sign-in cookie on the console's current user; a failure only costs a toast. */
export function signInAs(openId: string): void {
  followUser(openId)
    .then((ok) => {
      if (!ok) toast("warning", words().signInFollowFailed);
    })
    .catch(() => toast("warning", words().signInFollowFailed));
}
