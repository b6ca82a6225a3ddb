import { h } from "./dom.ts";
import type { CallbackEntry, CallEntry, EventEntry, LogEntry } from "./types.ts";
import { words } from "./words.ts";

/**
 * The "API 调用日志" panel: every Open API call the bot made, every event delivered to it and every card
 * callback, newest first, so throttling (Δ between PATCHes of one card) and coalescing can be watched.
 */

const MAX_SHOWN = 600;
const all = (): boolean => true;
const FILTERS: Record<string, (entry: LogEntry) => boolean> = {
  all,
  api: (entry: LogEntry) => entry.kind === "call",
  patch: (entry: LogEntry) => entry.kind === "call" && entry.method === "PATCH",
  interactions: (entry: LogEntry) => entry.kind !== "call",
  errors: (entry: LogEntry) => isError(entry),
};

export function isError(entry: LogEntry): boolean {
  if (entry.kind === "call") return entry.status >= 400 || (entry.code !== undefined && entry.code !== 0);
  if (entry.kind === "event") return entry.error !== undefined || entry.status !== 200;
  return entry.error !== undefined || entry.toast?.type === "error";
}

/** `/open-apis/im/v1/messages/om_0123…/reply` → `im/v1/messages/om_…cdef/reply`. */
export function shortPath(path: string): string {
  return path.replace(/^\/open-apis\//, "").replace(/\b(om|oc|ou)_[0-9a-zA-Z_]{9,}/g, (id) => shortId(id));
}

export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 3)}…${id.slice(-4)}` : id;
}

export function formatClock(ms: number): string {
  const date = new Date(ms);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

const ms = (value: number) => `${Math.round(value)} ms`;
const cardOutcome = (card: CallbackEntry["card"]): string =>
  card === "applied" ? words().log.applied : card === "rejected" ? words().log.rejected : "";

export interface LogPanelElements {
  list: HTMLElement;
  stats: HTMLElement;
  filter: HTMLSelectElement;
  clearButton: HTMLButtonElement;
  onSelectMessage: (messageId: string) => void;
}

export function createLogPanel({ list, stats, filter, clearButton, onSelectMessage }: LogPanelElements) {
  const entries: LogEntry[] = [];
  const seen = new Set<number>();
  /** The previous PATCH of each message, for the gap between updates. */
  const lastPatch = new Map<string, number>();
  const gaps = new Map<number, number>();
  let clearedAfter = 0;

  const matches = (entry: LogEntry) => (FILTERS[filter.value] ?? all)(entry);
  const visible = () => entries.filter((e) => e.seq > clearedAfter && matches(e));

  const render = () => {
    const shown = visible().slice(-MAX_SHOWN).reverse();
    list.replaceChildren(...shown.map((entry) => renderEntry(entry, gaps.get(entry.seq), onSelectMessage)));
    renderStats();
  };

  const renderStats = () => {
    const counted = entries.filter((e) => e.seq > clearedAfter);
    const calls = counted.filter((e) => e.kind === "call");
    const patches = calls.filter((e) => e.method === "PATCH").length;
    const limited = calls.filter((e) => e.code === 230020 || e.status === 429).length;
    const callbacks = counted.filter((e) => e.kind === "callback").length;
    const errors = counted.filter(isError).length;
    const w = words().log;
    stats.replaceChildren(
      stat(w.calls, calls.length),
      stat("PATCH", patches),
      stat(w.limited, limited, limited > 0),
      stat(w.callbacks, callbacks),
      stat(w.errors, errors, errors > 0),
    );
  };

  const add = (entry: LogEntry) => {
    if (seen.has(entry.seq)) return false;
    seen.add(entry.seq);
    entries.push(entry);
    entries.sort((a, b) => a.seq - b.seq);
    if (entry.kind === "call" && entry.method === "PATCH" && entry.messageId) {
      const previous = lastPatch.get(entry.messageId);
      if (previous !== undefined) gaps.set(entry.seq, entry.at - previous);
      lastPatch.set(entry.messageId, entry.at);
    }
    return true;
  };

  filter.addEventListener("change", render);
  clearButton.addEventListener("click", () => {
    clearedAfter = entries.at(-1)?.seq ?? clearedAfter;
    render();
  });

  return {
    /** Draws every entry again (the console's language changed). */
    redraw: render,
    /** Adds entries (duplicates by seq are ignored) and redraws. */
    addAll(batch: readonly LogEntry[]): void {
      for (const entry of batch) add(entry);
      render();
    },
    /** One live entry: put on top without redrawing the rest. */
    push(entry: LogEntry): void {
      if (!add(entry)) return;
      if (entry.seq > clearedAfter && matches(entry)) {
        list.prepend(renderEntry(entry, gaps.get(entry.seq), onSelectMessage));
        while (list.childElementCount > MAX_SHOWN) list.lastElementChild?.remove();
      }
      renderStats();
    },
  };
}

function stat(label: string, count: number, alert = false): HTMLElement {
  return h(
    "span",
    { class: ["log-stat", alert && "is-alert"] },
    `${label} `,
    h("b", { text: String(count) }),
  );
}

function renderEntry(
  entry: LogEntry,
  gapMs: number | undefined,
  onSelectMessage: (messageId: string) => void,
): HTMLElement {
  const messageId = entry.messageId;
  const item = h("li", {
    class: ["log-entry", `log-${entry.kind}`, isError(entry) && "is-error"],
    "data-testid": "log-entry",
    "data-kind": entry.kind,
    "data-seq": String(entry.seq),
    ...(entry.kind === "call" ? { "data-method": entry.method, "data-code": String(entry.code ?? "") } : {}),
    ...(messageId ? { "data-message-id": messageId, title: messageId } : {}),
  });
  if (messageId) {
    item.classList.add("is-linked");
    item.addEventListener("click", () => onSelectMessage(messageId));
  }
  item.append(h("time", { class: "log-time", text: formatClock(entry.at) }));
  if (entry.kind === "call") item.append(...callLine(entry, gapMs));
  else if (entry.kind === "event") item.append(...eventLine(entry));
  else item.append(...callbackLine(entry));
  const details = bodiesOf(entry);
  if (details) item.append(details);
  return item;
}

/**
 * The call's headers and bodies (the server already blanked secrets and clipped long bodies), folded: a
 * <details> opens without selecting the card the line links to.
 */
function bodiesOf(entry: LogEntry): HTMLElement | null {
  const w = words().log;
  const parts: [string, string | undefined][] =
    entry.kind === "call"
      ? [
          [w.requestHeaders, entry.requestHeaders && JSON.stringify(entry.requestHeaders, null, 2)],
          [w.requestBody, entry.requestBody],
          [w.responseBody, entry.responseBody],
        ]
      : entry.kind === "callback"
        ? [
            [w.buttonValue, entry.value && JSON.stringify(entry.value, null, 2)],
            [w.formValue, entry.formValue && JSON.stringify(entry.formValue, null, 2)],
          ]
        : [];
  const shown = parts.flatMap(([label, text]): [string, string][] =>
    typeof text === "string" && text !== "" ? [[label, text]] : [],
  );
  if (shown.length === 0) return null;
  const details = h(
    "details",
    { class: "log-details", "data-testid": "log-details" },
    h("summary", { class: "log-details-summary", text: shown.map(([label]) => label).join(" · ") }),
    ...shown.flatMap(([label, text]) => [
      h("div", { class: "log-details-label", text: label }),
      h("pre", { class: "log-body", "data-testid": "log-body", text }),
    ]),
  );
  details.addEventListener("click", (event) => event.stopPropagation());
  return details;
}

function callLine(entry: CallEntry, gapMs: number | undefined): HTMLElement[] {
  const codeClass = entry.code === undefined || entry.code === 0 ? "log-code" : "log-code is-bad";
  return [
    h("span", { class: `log-method log-method-${entry.method.toLowerCase()}`, text: entry.method }),
    h("span", { class: "log-path", text: shortPath(entry.path) }),
    h(
      "span",
      { class: "log-result" },
      h("span", {
        class: entry.status >= 400 ? "log-status is-bad" : "log-status",
        text: String(entry.status),
      }),
      entry.code === undefined ? null : h("span", { class: codeClass, text: `code ${entry.code}` }),
      h("span", { class: "log-ms", text: ms(entry.durationMs) }),
      gapMs === undefined
        ? null
        : h("span", {
            class: "log-gap",
            title: words().log.sincePatch,
            text: `Δ${(gapMs / 1000).toFixed(2)}s`,
          }),
    ),
  ];
}

function eventLine(entry: EventEntry): HTMLElement[] {
  return [
    h("span", { class: "log-method log-method-event", text: words().log.event }),
    h("span", { class: "log-path", text: `${entry.eventType} · ${shortId(entry.messageId)}` }),
    h(
      "span",
      { class: "log-result" },
      h("span", {
        class: entry.error ? "log-status is-bad" : "log-status",
        text: entry.error ? words().log.failed(entry.error) : String(entry.status ?? ""),
      }),
      h("span", { class: "log-ms", text: ms(entry.durationMs) }),
    ),
  ];
}

function callbackLine(entry: CallbackEntry): HTMLElement[] {
  const w = words().log;
  const what = entry.label ? w.quoted(entry.label) : entry.name ? w.quoted(entry.name) : w.card;
  const fields = entry.formValue ? Object.keys(entry.formValue).length : 0;
  return [
    h("span", { class: "log-method log-method-callback", text: w.callback }),
    h("span", {
      class: "log-path",
      text: `${w.clicked(entry.operatorName, what)}${fields > 0 ? w.formFields(fields) : ""}`,
    }),
    h(
      "span",
      { class: "log-result" },
      entry.toast
        ? h("span", { class: `log-toast log-toast-${entry.toast.type}`, text: entry.toast.content })
        : h("span", { class: "log-toast", text: w.noToast }),
      cardOutcome(entry.card) ? h("span", { class: "log-note", text: cardOutcome(entry.card) }) : null,
      entry.revertedUpdates
        ? h("span", {
            class: "log-note",
            text: w.reverted(entry.revertedUpdates),
          })
        : null,
      entry.error ? h("span", { class: "log-code is-bad", text: entry.error }) : null,
      h("span", { class: "log-ms", title: w.callbackTime, text: ms(entry.durationMs) }),
    ),
  ];
}
