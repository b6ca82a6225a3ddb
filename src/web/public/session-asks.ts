/**
 * The session page's questions and the task's buttons: a panel per pending ask (answer, decline), the
 * earliest deadline, 延长 and 取消任务 with its confirmation — the card's, with the card's rules (the hub
 * checks them again) — and the short notices that say what became of them.
 */
import { createAskPanel } from "./ask-panel.ts";
import { fill } from "./page-text.ts";
import { byTestId, isLive, page, send, T } from "./session-state.ts";
import { renderStatus } from "./session-view.ts";
import type { PageAsk } from "./wire.ts";

const NOTICE_MS = 4_000;

export function onAsk(ask: PageAsk): void {
  if (typeof ask.requestId !== "string" || !Array.isArray(ask.questions)) return;
  // The questions of the session's live run belong on its own page, not on an earlier run's.
  if (!isLive()) return;
  page.resync?.seen.add(ask.requestId);
  const known = page.deadlines.get(ask.requestId);
  if (typeof ask.expiresAt === "number") {
    page.deadlines.set(ask.requestId, { expiresAt: ask.expiresAt, canExtend: ask.canExtend === true });
    // The same ask with a later deadline: someone pressed 延长 (here or on the card).
    if (known && ask.expiresAt > known.expiresAt)
      notice(fill(T.actions.extended, { time: deadlineText(earliestDeadline() ?? ask.expiresAt) }));
  }
  // A re-sent ask keeps its panel, and with it whatever the viewer has already filled in.
  if (page.panels.has(ask.requestId)) return renderActions();
  const panel = createAskPanel(document, ask, {
    text: T.panel,
    canAnswer: page.canAnswer,
    // An outside agent's question: 拒绝回答 beside 提交 (the agent reads status "declined").
    ...(ask.declinable === true
      ? {
          declineText: T.actions.decline,
          onDecline: () => {
            panel.showError(null);
            const sent = send({
              type: "ask_user_questions_decline",
              sessionId: page.sessionId,
              data: { requestId: ask.requestId },
            });
            if (!sent) return panel.showError(T.asks.offline);
            panel.setBusy(true);
          },
        }
      : {}),
    onSubmit: (answers) => {
      panel.showError(null);
      const sent = send({
        type: "ask_user_questions_result",
        sessionId: page.sessionId,
        data: { requestId: ask.requestId, answers },
      });
      if (!sent) return panel.showError(T.asks.offline);
      panel.setBusy(true);
    },
  });
  page.panels.set(ask.requestId, panel);
  byTestId("asks").append(panel.element);
  relabel();
}

export function removePanel(requestId: string | undefined): boolean {
  const panel = requestId === undefined ? undefined : page.panels.get(requestId);
  if (!panel) return false;
  panel.element.remove();
  page.panels.delete(panel.requestId);
  page.deadlines.delete(panel.requestId);
  page.unconfirmed.delete(panel.requestId);
  relabel();
  return true;
}

function relabel(): void {
  const total = page.panels.size;
  let index = 0;
  for (const panel of page.panels.values()) panel.setHeading(++index, total);
  renderStatus();
  renderActions();
}

export function setCanAnswer(value: boolean): void {
  page.canAnswer = value;
  for (const panel of page.panels.values()) panel.setCanAnswer(value);
  renderActions();
}

function earliestDeadline(): number | undefined {
  const shown = [...page.deadlines.entries()].filter(([requestId]) => page.panels.has(requestId));
  return shown.length > 0 ? Math.min(...shown.map(([, entry]) => entry.expiresAt)) : undefined;
}

/**
 * The deadline in the viewer's own zone and language (the browser's clock and zone, not the bot's): the time,
 * with the date when it is not today; the full date and the zone's name on hover.
 */
function deadlineText(at: number): string {
  const date = new Date(at);
  const today = new Date().toDateString() === date.toDateString();
  const time: Intl.DateTimeFormatOptions = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
  return new Intl.DateTimeFormat(T.lang, today ? time : { month: "short", day: "numeric", ...time }).format(
    date,
  );
}

export function renderActions(): void {
  const live = isLive() && page.snapshot?.active === true;
  const earliest = live ? earliestDeadline() : undefined;
  const line = byTestId("ask-deadline");
  line.hidden = earliest === undefined;
  if (earliest !== undefined) {
    const [before, after] = T.actions.deadline.split("{time}");
    const time = document.createElement("time");
    time.dateTime = new Date(earliest).toISOString();
    time.textContent = deadlineText(earliest);
    time.title = new Intl.DateTimeFormat(T.lang, { dateStyle: "full", timeStyle: "long" }).format(earliest);
    line.replaceChildren(`⏰ ${before ?? ""}`, time, after ?? "");
  }
  const extendable = [...page.deadlines.entries()].some(
    ([requestId, entry]) => page.panels.has(requestId) && entry.canExtend,
  );
  const extend = byTestId("extend", HTMLButtonElement);
  extend.textContent = T.actions.extend;
  extend.hidden = !(live && page.canAnswer && earliest !== undefined && extendable);
  const cancel = byTestId("cancel-task", HTMLButtonElement);
  cancel.textContent = T.actions.cancelTask;
  cancel.hidden = !(live && page.canAnswer && page.canCancel);
  byTestId("run-actions").hidden = line.hidden && extend.hidden && cancel.hidden;
}

byTestId("extend").addEventListener("click", () => {
  if (!send({ type: "extend", sessionId: page.sessionId })) notice(T.asks.offline, "error");
});

const cancelDialog = byTestId("cancel-dialog", HTMLDialogElement);
byTestId("cancel-dialog-title").textContent = T.actions.confirmTitle;
byTestId("cancel-dialog-text").textContent = T.actions.confirmText;
// One click used to end the task on the card; here, as there, a confirmation comes first.
byTestId("cancel-task").addEventListener("click", () => cancelDialog.showModal());
byTestId("cancel-dialog-no").addEventListener("click", () => cancelDialog.close());
byTestId("cancel-dialog-yes").addEventListener("click", () => {
  cancelDialog.close();
  if (!send({ type: "cancel", sessionId: page.sessionId })) notice(T.asks.offline, "error");
});

export function cancelledText(reason: unknown): string {
  if (typeof reason === "string" && reason.startsWith("answered")) return T.asks.answeredElsewhere;
  if (reason === "timeout") return T.asks.timedOut;
  if (reason === "declined") return T.actions.declined;
  return T.asks.cancelled;
}

export function notice(text: string, kind: "ok" | "error" = "ok"): void {
  const note = document.createElement("p");
  note.className = kind === "ok" ? "ask-notice" : "ask-notice error-note";
  note.dataset.testid = "ask-notice";
  note.textContent = text;
  byTestId("asks").before(note);
  setTimeout(() => note.remove(), NOTICE_MS);
}
