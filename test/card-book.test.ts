import { afterEach, describe, expect, it } from "vitest";
import { AskRegistry } from "../src/asks/registry.ts";
import type { Card } from "../src/cards/model.ts";
import type { RunView } from "../src/domain/types.ts";
import { DEFAULT_ASK_TIMES } from "../src/feishu/ask-deadline.ts";
import { CardBook } from "../src/feishu/progress/card-book.ts";
import { sampleAsk } from "./fixtures.ts";
import { formsOn } from "./helpers/feishu.ts";

/**
 * The card book keeps no copy of a run or of its questions: what a card shows is read from the runner and
 * the registry when it is rendered. Here both are changed behind the book's back (no event reaches it) and
 * the next render must show the change.
 */

const NOW = 1_700_000_000_000;
const run: RunView = {
  id: "run-1",
  sessionId: "feishu-cli_a-private-ou_a",
  senderId: "ou_a",
  input: "部署新服务",
  status: "running",
  steps: [],
  startedAt: NOW,
};

let registry: AskRegistry;
afterEach(async () => {
  for (const ask of registry.getPendingForSession(run.sessionId))
    await registry.cancel(ask.requestId, "done");
});

function setup() {
  let current: RunView = structuredClone(run);
  let n = 0;
  registry = new AskRegistry({
    timeoutMs: 60_000,
    now: () => NOW,
    newId: () => `req-${++n}`,
    onListenerError: (error) => {
      throw error;
    },
  });
  const runner = {
    activeRun: (sessionId: string) =>
      sessionId === current.sessionId && current.status === "running" ? current : undefined,
    getSession: async () => undefined,
    queued: async () => [],
  };
  const book = new CardBook({
    runs: { activeRun: runner.activeRun },
    runner,
    registry,
    times: DEFAULT_ASK_TIMES,
    now: () => NOW,
  });
  const card = book.open(run, { chatId: "oc_1", sourceMessageId: "om_1" }, undefined);
  // As the channel does on every run event.
  const setRun = (next: Partial<RunView>) => {
    current = { ...current, ...next };
    book.runChanged(current);
  };
  return { book, card, setRun };
}

const text = (card: Card) => JSON.stringify(card);

describe("the card book", () => {
  it("renders the run as its last event had it, not as it was when the card was opened", () => {
    const { book, card, setRun } = setup();
    expect(text(book.render(card))).not.toContain("全部完成");
    setRun({ status: "completed", text: "全部完成", endedAt: NOW + 1000 });
    const shown = book.render(card);
    expect(shown.header?.template).toBe("green");
    expect(text(shown)).toContain("全部完成");
    expect(book.shape(card)).toEqual({ key: "completed||0", formOpen: false, final: true });
  });

  it("shows the registry's pending questions as forms, and drops them once settled there", async () => {
    const { book, card } = setup();
    expect(formsOn(book.render(card))).toEqual([]);
    const ask = await registry.register({
      sessionId: run.sessionId,
      runId: run.id,
      answererId: "ou_a",
      questions: sampleAsk().questions,
    });
    expect(formsOn(book.render(card))).toHaveLength(1);
    expect(book.shape(card)).toMatchObject({
      key: `running|${ask.requestId}@${ask.expiresAt}|0`,
      formOpen: true,
    });
    // Another run's question in the same session is not this card's.
    await registry.register({
      sessionId: run.sessionId,
      runId: "run-2",
      answererId: "ou_a",
      questions: sampleAsk().questions,
    });
    expect(book.asksOf(card).map((a) => a.requestId)).toEqual([ask.requestId]);
    await registry.cancel(ask.requestId, "Session cancelled");
    expect(formsOn(book.render(card))).toEqual([]);
  });

  it("forgets only the card it was given, and finds cards by their message", () => {
    const { book, card } = setup();
    book.placed(card, "om_card");
    expect(book.byMessage("om_card")).toBe(card);
    const newer = book.open(run, { chatId: "oc_1", sourceMessageId: "om_1" }, undefined);
    book.forget(card);
    expect(book.get(run.id)).toBe(newer);
    expect(book.byMessage("om_card")).toBeUndefined();
  });
});
