import { describe, expect, it } from "vitest";
import { AskRegistry } from "../src/asks/registry.ts";
import type { RunView } from "../src/domain/types.ts";
import { answerByReply } from "../src/feishu/card-replies.ts";
import type { ActiveCard } from "../src/feishu/progress/card-book.ts";
import { sampleAsk } from "./fixtures.ts";

/**
 * One card, two stacked asks for two people (an outside agent's group task asks each call its own answerer):
 * a reply is checked against the answerers of the asks it names, not against the card's first ask.
 */
const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const CHAT = "oc_team";

async function stackedForTwo() {
  const registry = new AskRegistry({
    timeoutMs: 900_000,
    now: Date.now,
    newId: (() => {
      let n = 0;
      return () => `req-${++n}`;
    })(),
    onListenerError: (error) => {
      throw error;
    },
  });
  const [question] = sampleAsk().questions;
  const base = { sessionId: "s1", runId: "run-1", questions: [question!] };
  const forAlice = await registry.register({ ...base, answererId: ALICE });
  const forBob = await registry.register({ ...base, answererId: BOB });
  const card = {
    runId: "run-1",
    sessionId: "s1",
    chatId: CHAT,
    chatType: "group",
    topic: undefined,
  } as ActiveCard;
  const deps = {
    book: {
      byMessage: () => undefined,
      asksOf: () => registry.getPendingForSession("s1"),
      runOf: () => ({ status: "running" }) as RunView,
    },
    registry,
    nameOf: (id: string) => (id === ALICE ? "Alice" : "Bob"),
  };
  const reply = (from: string, text: string) =>
    answerByReply(deps, card, { senderOpenId: from, chatId: CHAT }, { topic: undefined }, text);
  return { registry, forAlice, forBob, reply, label: question!.options[0]!.label };
}

describe("a reply to stacked asks of two people", () => {
  it("lets the second ask's answerer answer it by its number, and leaves the first ask open", async () => {
    const { registry, forAlice, forBob, reply } = await stackedForTwo();
    expect(await reply(BOB, "2:1")).toEqual({ kind: "answered" });
    expect(registry.get(forBob.requestId)).toBeUndefined();
    expect(registry.get(forAlice.requestId)).toBeDefined();
  });

  it("refuses a reply naming the other person's question, naming who may answer, and settles nothing", async () => {
    const { registry, forAlice, forBob, reply } = await stackedForTwo();
    expect(await reply(BOB, "1:1")).toMatchObject({
      kind: "refused",
      text: expect.stringContaining("Alice"),
    });
    expect(await reply(BOB, "1")).toMatchObject({ kind: "refused", text: expect.stringContaining("Alice") });
    expect(registry.get(forAlice.requestId)).toBeDefined();
    expect(registry.get(forBob.requestId)).toBeDefined();
  });
});
