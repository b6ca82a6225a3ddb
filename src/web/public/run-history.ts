import { oneLine } from "../../util/text.ts";

/**
 * The chat's runs on the session page, newest first, each a link to its own page (the page every progress
 * card links to), the one on screen marked with aria-current. Text only through textContent.
 */

export interface HistoryRun {
  id: string;
  status: string;
  title?: string;
  startedAt?: number;
}

export function historyItems(
  doc: Document,
  runs: readonly HistoryRun[],
  options: {
    shownId?: string | null;
    href: (runId: string) => string;
    statusText: (status: string) => string;
    /** A run without a title (the page's 任务), and the page's language for its times. */
    untitled: string;
    locale: string;
  },
): HTMLLIElement[] {
  const time = new Intl.DateTimeFormat(options.locale, {
    month: "numeric",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
  return runs.map((entry) => {
    const item = doc.createElement("li");
    item.className = "history-item";
    item.dataset.testid = "history-run";
    item.dataset.runId = entry.id;
    if (entry.id === options.shownId) item.setAttribute("aria-current", "page");
    const link = doc.createElement("a");
    link.href = options.href(entry.id);
    link.dataset.testid = "history-link";
    link.textContent = oneLine(entry.title ?? "") || options.untitled;
    const status = doc.createElement("span");
    status.className = "history-status";
    status.dataset.testid = "history-status";
    status.dataset.status = entry.status;
    status.textContent = options.statusText(entry.status);
    const started = doc.createElement("span");
    started.className = "history-time";
    started.textContent =
      entry.startedAt !== undefined && Number.isFinite(entry.startedAt)
        ? time.format(new Date(entry.startedAt))
        : "";
    item.append(link, status, started);
    return item;
  });
}
