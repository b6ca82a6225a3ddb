import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DEMO_QUESTIONS } from "../src/asks/demo-questions.ts";
import { permissionAsk } from "../src/harness/agents/acp/permission.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * A reply to a card with several asks stacked on it (issue 30): `/parallel`'s two ask calls, or an ask beside
 * an ACP permission form. The card numbers its questions across all of them (1.【部署方式】, 2.【附加功能】, 3.…),
 * and a reply's `1:2 3:1` means those same questions: each ask it names settles under its own compare-and-set,
 * a bare answer goes to the first question, and an ask named only in part gets the card's refusal and settles
 * nothing. Fake messenger, fake time; each scenario ends with exactly the expected settlements or a refusal.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const GROUP = "oc_team";
const { deploy, features } = DEMO_QUESTIONS;

/** The ACP permission form exactly as the ACP agent asks it (permission.ts), for an edit of notes.md. */
const PERMISSION = permissionAsk(
  {
    sessionId: "acp-1",
    toolCall: { toolCallId: "edit-1", title: "Edit notes.md", kind: "edit" },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" },
      { optionId: "reject", name: "Reject", kind: "reject_once" },
    ],
  },
  { title: "Edit notes.md", kind: "edit", where: "" },
);

/** Asks two questions and, once that ask is on the card, the permission beside it; then waits to be stopped. */
function askAndPermissionAgent(): Agent {
  return {
    name: "ask-and-permission",
    async run(ctx) {
      const asked = ctx.callTool("ask_user_questions", { questions: [deploy, features] });
      // After the ask, so the card shows it first: its questions are 1 and 2, the permission's is 3.
      await new Promise((resolve) => setTimeout(resolve, 10));
      const permitted = ctx.callTool("ask_user_questions", PERMISSION.args);
      await Promise.all([asked, permitted]);
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      return { text: "done" };
    },
  };
}

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});
async function rig(options: Parameters<typeof startFakeChannel>[0] = {}): Promise<FakeChannelRig> {
  const started = await startFakeChannel({ askPing: false, ...options });
  rigs.push(started);
  return started;
}

/** Alice's task (in a group when `group`), its card once two asks are on it, and their ids in card order. */
async function stacked(r: FakeChannelRig, text: string, group = false) {
  const where = group
    ? ({ chatType: "group", chatId: GROUP, mentionBot: true } as const)
    : ({ chatType: "p2p" } as const);
  const cardId = await r.progressCard(r.send({ ...where, senderOpenId: ALICE, text }));
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return requestIdsOn(c).length === 2 && c;
  }, "two asks on the card");
  const [first = "", second = ""] = requestIdsOn(card);
  return { cardId, card, first, second };
}

/** The bot's text messages (not cards) that reply to `messageId`. */
function textsReplyingTo(r: FakeChannelRig, messageId: string): string[] {
  return r
    .fromBot()
    .filter((m) => m.msgType === "text" && m.parentId === messageId)
    .map((m) => String((JSON.parse(m.content) as { text?: unknown }).text));
}

/** Each ask's end, in card order: the chosen labels and 其他 text per question and the surface, or pending. */
async function settlements(r: FakeChannelRig, ...requestIds: string[]) {
  const states = await Promise.all(requestIds.map((id) => r.core.registry.state(id)));
  return states.map((state) => {
    const outcome = state?.outcome;
    if (!outcome) return "pending";
    if (outcome.kind !== "answered") return outcome.kind;
    return {
      surface: outcome.surface,
      answers: outcome.answers.map((a) => [a.selectedLabels, a.customInput]),
    };
  });
}

describe("replying to a card with stacked asks", () => {
  it("numbers the questions across the stacked asks on the card", async () => {
    const r = await rig();
    const { card } = await stacked(r, "/parallel");
    const text = cardText(card);
    expect(text).toContain("**1.【部署方式】**");
    expect(text).toContain("**2.【附加功能】**");
  });

  it("settles both /parallel asks from one reply naming a question of each", async () => {
    const r = await rig();
    const { cardId, first, second } = await stacked(r, "/parallel");
    const reply = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "1:2 2:暗色模式", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual([
      { surface: "reply", answers: [[["Kubernetes"], null]] },
      { surface: "reply", answers: [[["暗色模式"], null]] },
    ]);
    expect(textsReplyingTo(r, reply)).toEqual([]);
  });

  it("takes one line per question across the asks", async () => {
    const r = await rig();
    const { cardId, first, second } = await stacked(r, "/parallel");
    r.send({ chatType: "p2p", senderOpenId: ALICE, text: "systemd\n多语言、3", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual([
      { surface: "reply", answers: [[["systemd"], null]] },
      { surface: "reply", answers: [[["多语言", "导出 PDF"], null]] },
    ]);
  });

  it("gives a bare answer to the first question only, and the second ask stays on the card", async () => {
    const r = await rig();
    const { cardId, first, second } = await stacked(r, "/parallel");
    const reply = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "2", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual([
      { surface: "reply", answers: [[["Kubernetes"], null]] },
      "pending",
    ]);
    expect(textsReplyingTo(r, reply)).toEqual([]);
    const after = await r.until(() => {
      const c = r.cardOf(cardId);
      return requestIdsOn(c).length === 1 && c;
    }, "the card with the second ask alone");
    expect(requestIdsOn(after)).toEqual([second]);
  });

  it("answers only the second ask when the reply names only its question", async () => {
    const r = await rig();
    const { cardId, first, second } = await stacked(r, "/parallel");
    r.send({ chatType: "p2p", senderOpenId: ALICE, text: "2：我要离线包", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual([
      "pending",
      { surface: "reply", answers: [[[], "我要离线包"]] },
    ]);
  });

  it("settles the permission beside an ask by its number on the card", async () => {
    const r = await rig({ agent: askAndPermissionAgent(), tools: [] });
    const { cardId, card, first, second } = await stacked(r, "go");
    expect(r.core.registry.get(second)?.questions[0]?.header).toBe(PERMISSION.args.questions[0]?.header);
    expect(cardText(card)).toContain(`**3.【${PERMISSION.args.questions[0]?.header}】**`);
    const reply = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "3:1", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual([
      "pending",
      { surface: "reply", answers: [[["Allow"], null]] },
    ]);
    expect(textsReplyingTo(r, reply)).toEqual([]);
  });

  it("refuses the ask a reply names only in part with the card's words, and still settles the complete one", async () => {
    const r = await rig({ agent: askAndPermissionAgent(), tools: [] });
    const { cardId, first, second } = await stacked(r, "go");
    const reply = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "1:2 3:Reject", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual([
      "pending",
      { surface: "reply", answers: [[["Reject"], null]] },
    ]);
    // Question 2 is the ask's second, 附加功能: numbered as the card shows it, not within its ask.
    expect(textsReplyingTo(r, reply)).toEqual(["第 2 题「附加功能」：请至少选择一项或填写其他"]);
    // The refused ask stays open: a complete reply answers it after all.
    r.send({ chatType: "p2p", senderOpenId: ALICE, text: "1:2 2:1", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first)).toEqual([
      {
        surface: "reply",
        answers: [
          [["Kubernetes"], null],
          [["暗色模式"], null],
        ],
      },
    ]);
  });

  it("refuses a reply that leaves every named ask incomplete, and settles nothing", async () => {
    const r = await rig({ agent: askAndPermissionAgent(), tools: [] });
    const { cardId, first, second } = await stacked(r, "go");
    const reply = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "2:暗色模式", parentId: cardId });
    await r.idle();
    expect(await settlements(r, first, second)).toEqual(["pending", "pending"]);
    expect(textsReplyingTo(r, reply)).toEqual(["第 1 题「部署方式」：请至少选择一项或填写其他"]);
  });

  it("refuses another member's reply to the stacked asks, and settles nothing", async () => {
    const fake = new FakeMessenger({ timeoutMs: 5000, userNames: { [ALICE]: "Alice" } });
    const r = await rig({ fake });
    const { cardId, first, second } = await stacked(r, "/parallel", true);
    const bob = r.send({ chatType: "group", senderOpenId: BOB, text: "1:2 2:暗色模式", parentId: cardId });
    await r.idle();
    expect(textsReplyingTo(r, bob)).toEqual(["仅 @Alice 可以回答此问题"]);
    expect(await settlements(r, first, second)).toEqual(["pending", "pending"]);
    expect(formsOn(r.cardOf(cardId))).toHaveLength(1);
  });
});
