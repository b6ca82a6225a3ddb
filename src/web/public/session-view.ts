/**
 * The session page's run on screen: its status (and the tab's title), its task, steps, result and error, the
 * note and link on an earlier run's page, the chat's runs and the queued messages. Reads `page`, writes the DOM.
 */
import { usageText } from "../../domain/usage.ts";
import { oneLine, truncate } from "../../util/text.ts";
import { svgIcon } from "./icons.ts";
import { markdownToHtml } from "./markdown.ts";
import { fill } from "./page-text.ts";
import { historyItems } from "./run-history.ts";
import { byTestId, isLive, page, runPath, STATUS_TEXT, sessionPath, T } from "./session-state.ts";
import type { PageRun, PageSnapshot, PageStep } from "./wire.ts";

const ASK_TOOL = "ask_user_questions";

function statusKey(snapshot: PageSnapshot | null): string {
  const run = isLive() ? snapshot?.run : page.run;
  if (!run) return "none";
  if (run.status !== "running") return run.status;
  const asking = (run.steps ?? []).some((step) => step.tool === ASK_TOOL && step.status === "running");
  return page.panels.size > 0 || asking ? "waiting" : "running";
}

export function renderStatus(): void {
  const key = statusKey(page.snapshot);
  const status = byTestId("status");
  status.textContent = STATUS_TEXT[key] ?? key;
  status.dataset.status = key;
  byTestId("waiting-for-sender").hidden = !(key === "waiting" && page.panels.size === 0);
  document.title = fill(T.page.statusTabTitle, { status: STATUS_TEXT[key] ?? key, title: page.title });
}

export function renderRun(run: PageRun | null): void {
  byTestId("task-title").textContent = run ? truncate(oneLine(run.input), 120) : T.page.noTask;
  const steps = Array.isArray(run?.steps) ? run.steps : [];
  const list = byTestId("steps");
  list.replaceChildren(...steps.map(stepItem));
  const empty = byTestId("no-steps");
  empty.hidden = !run || steps.length > 0;
  empty.textContent =
    run?.status === "running" || run?.status === "recovering" ? T.page.preparing : T.page.noSteps;

  const text = typeof run?.text === "string" ? run.text : "";
  byTestId("result").hidden = text === "";
  // The agent writes card markdown; markdownToHtml escapes every piece of text and builds only its own tags
  // (http(s) links only), so this is the one innerHTML on the page.
  byTestId("result-text").innerHTML = markdownToHtml(text);
  const error = run?.status === "failed" ? String(run.error ?? "") : "";
  byTestId("run-error").hidden = error === "";
  byTestId("run-error-text").textContent = error;
  // The card's footer, in the same words (domain/usage.ts): tokens and model, once the run ended.
  const used = run && !isUnderWay(run) ? usageText(run.usage, T.lang) : undefined;
  const usage = byTestId("run-usage");
  usage.hidden = used === undefined;
  usage.textContent = used ?? "";
}

function isUnderWay(run: PageRun): boolean {
  return run.status === "running" || run.status === "recovering";
}

function stepItem(step: PageStep): HTMLLIElement {
  const item = document.createElement("li");
  item.className = `step step-${step.status}`;
  item.dataset.testid = "step";
  item.dataset.status = step.status;
  const icon = document.createElement("span");
  icon.className = "step-icon";
  const name = stepIcon(step.status);
  icon.append(svgIcon(name, { label: T.icons[name] }));
  const title = document.createElement("span");
  title.className = "step-title";
  title.textContent = truncate(oneLine(step.title ?? step.tool ?? ""), 120);
  item.append(icon, title);
  if (step.summary) {
    const summary = document.createElement("span");
    summary.className = "step-summary";
    summary.textContent = truncate(oneLine(step.summary), 200);
    item.append(summary);
  }
  return item;
}

export function renderOlderRun(live: boolean): void {
  const note = byTestId("older-run");
  note.hidden = live || !page.runId;
  if (note.hidden || document.querySelector('[data-testid="latest-run-link"]')) return;
  const link = document.createElement("a");
  link.dataset.testid = "latest-run-link";
  link.href = sessionPath();
  link.textContent = T.page.latestRunLink;
  note.append(link);
}

export function renderHistory(): void {
  byTestId("history").hidden = page.history.length === 0;
  byTestId("run-list").replaceChildren(
    ...historyItems(document, page.history, {
      shownId: page.runId ?? page.snapshot?.run?.id ?? null,
      href: runPath,
      statusText: (status) => STATUS_TEXT[status] ?? status,
      untitled: T.page.untitledRun,
      locale: T.lang,
    }),
  );
}

export function renderQueue(queued: readonly { text?: string }[], total: unknown): void {
  byTestId("queue").hidden = queued.length === 0;
  const items = queued.map((message) => {
    const item = document.createElement("li");
    item.dataset.testid = "queued-message";
    item.textContent = truncate(oneLine(message.text ?? ""), 120);
    return item;
  });
  // The snapshot lists the first few queued messages only (ws/snapshot.ts); say how many more wait.
  const more = typeof total === "number" ? total - queued.length : 0;
  if (more > 0) {
    const item = document.createElement("li");
    item.dataset.testid = "queued-more";
    item.textContent = fill(T.page.queuedMore, { count: more });
    items.push(item);
  }
  byTestId("queue-list").replaceChildren(...items);
}

/** A step's status as its icon: the statuses the icons draw, anything else as running. */
function stepIcon(status: string): "done" | "failed" | "pending" | "running" | "stopped" {
  return status === "done" || status === "failed" || status === "pending" || status === "stopped"
    ? status
    : "running";
}
