import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { startEmulator } from "../src/local/emulator/index.ts";
import { selectLocale } from "../src/strings/index.ts";
import {
  FAST_LONG_CONNECTION,
  type FeishuRig,
  formsOn,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "./helpers/feishu.ts";
import { foldHeaderTags } from "./helpers/header-tags.ts";

/**
 * Languages end to end (issue 19), through the real SDK and the emulator over both transports: a Lark tenant's
 * bot (BOT_LOCALE=en_us, chosen once like main.ts does) writes English cards with Chinese beside them, and
 * every toast answers in the clicking client's language.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";

const rigs: FeishuRig[] = [];
let transport: "ws" | "webhook" = "ws";
async function rig(): Promise<FeishuRig> {
  const started = await startFeishuRig({ transport });
  rigs.push(started);
  return started;
}
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
});
afterAll(() => selectLocale("zh_cn"));

/** Every text object of a card: what a client in `locale` reads there (its i18n text, else content). */
function readAs(card: Card, locale: string): string {
  const out: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === "object") {
      const content: unknown = Reflect.get(node, "content");
      const i18n: unknown = Reflect.get(node, "i18n_content");
      const own = i18n !== null && typeof i18n === "object" ? Reflect.get(i18n, locale) : undefined;
      if (typeof content === "string") out.push(typeof own === "string" ? own : content);
      for (const [key, value] of Object.entries(node)) if (key !== "i18n_content") walk(value);
    }
  };
  walk(foldHeaderTags(card));
  return out.join("\n");
}

async function asked(r: FeishuRig, chatType: "p2p" | "group" = "p2p") {
  const userMessageId = await r.send(
    chatType === "p2p"
      ? { chatType: "p2p", senderOpenId: ALICE, text: "deploy the new service" }
      : { chatType: "group", chatId: "oc_team", senderOpenId: ALICE, text: "deploy", mentionBot: true },
  );
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length > 0 && c;
  }, "a form on the card");
  const requestId = requestIdsOn(card)[0] ?? "";
  const sessionId = r.core.registry.get(requestId)?.sessionId ?? "";
  const submit = { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE };
  return { cardId, card, submit };
}

describe.each(["ws", "webhook"] as const)("languages over the %s transport", (name) => {
  beforeAll(() => {
    transport = name;
  });

  describe("a Lark tenant (bot locale en_us)", () => {
    beforeAll(() => selectLocale("en_us"));
    afterAll(() => selectLocale("zh_cn"));

    it("sends an English card with Chinese beside it, asks the demo's questions in English, and toasts in English", async () => {
      const r = await rig();
      const { cardId, card, submit } = await asked(r);
      expect(card.config.locales).toEqual(["en_us", "zh_cn"]);
      expect(card.config.summary?.content).toBe("Waiting for your answer to 2 questions");
      expect(card.config.summary?.i18n_content?.zh_cn).toBe("等待你回答 2 个问题");
      const english = readAs(card, "en_us");
      expect(english).toContain("How should the new service be deployed?");
      expect(english).toContain("Submit");
      expect(english).toContain("Cancel task");
      expect(english).not.toMatch(/[\u4e00-\u9fff]/);
      // A Chinese client in the same tenant reads the bot's own words in Chinese.
      expect(readAs(card, "zh_cn")).toContain("取消任务");

      const outcome = await r.emulator.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submit,
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_c0: "", ask0_q1: ["0"], ask0_c1: "" },
        locale: "en_us",
      });
      expect(outcome.toast).toEqual({ type: "success", content: "Submitted" });
      expect(outcome.answer).toMatchObject({
        toast: { content: "Submitted", i18n: { zh_cn: "已提交", en_us: "Submitted" } },
      });
      const done = await r.until(() => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      }, "the completed card");
      expect(readAs(done, "en_us")).toContain("**Done** — carried out as you chose:");
      expect(readAs(done, "en_us")).toContain("Deployment: Docker (recommended)");
    });

    it("shows English toasts to a tenant whose clients read English, without a locale in the click", async () => {
      // Local mode's emulator with BOT_LOCALE=en_us: the console's people are English-speaking clients.
      const emulator = await startEmulator({
        encryptKey: WEBHOOK_KEY,
        longConnection: FAST_LONG_CONNECTION,
        clientLocale: "en_us",
        // The tenant's directory knows Alice: the refusal names who may answer (issue 25).
        userNames: { [ALICE]: "Alice" },
      });
      try {
        const r = await startFeishuRig({ transport, emulator });
        rigs.push(r);
        const { cardId, submit } = await asked(r, "group");
        const byBob = await r.click({
          messageId: cardId,
          operatorOpenId: BOB,
          value: submit,
          name: "ask0_submit",
        });
        expect(byBob.toast).toEqual({ type: "error", content: "Only @Alice can answer this question" });
      } finally {
        for (const r of rigs.splice(0)) await r.stop();
        await emulator.close();
      }
    });
  });

  describe("a Feishu tenant (bot locale zh_cn)", () => {
    it("answers an English client's click in English, a Chinese client's in Chinese, with the same card", async () => {
      const r = await rig();
      const { cardId, card, submit } = await asked(r, "group");
      expect(card.config.locales).toEqual(["zh_cn", "en_us"]);
      const byBob = { messageId: cardId, operatorOpenId: BOB, value: submit, name: "ask0_submit" };
      const english = await r.emulator.click({ ...byBob, formValue: { ask0_q0: "0" }, locale: "en_us" });
      // This emulator's directory has no names: the refusal says whose question it is without one.
      expect(english.toast).toEqual({
        type: "error",
        content: "Only the task's sender can answer this question",
      });
      // The callback names no language (feishu-platform §2.1): the answer is the same for every client, its
      // `content` in the bot's language and every language in `i18n`; the English client showed its own.
      expect(english.answer).toMatchObject({
        toast: {
          content: "仅任务发起人可以回答此问题",
          i18n: {
            zh_cn: "仅任务发起人可以回答此问题",
            en_us: "Only the task's sender can answer this question",
          },
        },
      });
      const chinese = await r.emulator.click({ ...byBob, formValue: { ask0_q0: "0" } });
      expect(chinese.toast).toEqual({ type: "error", content: "仅任务发起人可以回答此问题" });
      expect(chinese.answer).toMatchObject({ toast: { content: "仅任务发起人可以回答此问题" } });
      // The group card names its sender in both languages and carries one set of callback values.
      expect(readAs(card, "en_us")).toContain(`**Waiting for** <at id=${ALICE}></at> **to answer**`);
      expect(readAs(card, "zh_cn")).toContain(`**等待** <at id=${ALICE}></at> **回答**`);
    });
  });
});

describe("a platform that refuses the i18n fields", () => {
  it("gets the card again in the bot's language alone, and every later state lands that way", async () => {
    transport = "ws";
    const r = await rig();
    // Should Feishu refuse i18n_content (the fields rest partly on assumption), every such body fails.
    r.emulator.injectFault({
      match: { bodyIncludes: "i18n_content" },
      times: 100,
      response: { httpStatus: 400, code: 230099, msg: "Failed to create card content, ext=ErrCode: 200621" },
    });
    const { cardId, card, submit } = await asked(r);
    expect(JSON.stringify(card)).not.toContain("i18n_content");
    expect(card.config.summary?.content).toBe("等待你回答 2 个问题");
    const answered = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submit,
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_c0: "", ask0_q1: ["0"], ask0_c1: "" },
    });
    expect(answered.toast).toEqual({ type: "success", content: "已提交" });
    const done = await r.until(() => {
      const c = r.cardOf(cardId);
      return c.header?.template === "green" && c;
    }, "the completed card");
    expect(JSON.stringify(done)).not.toContain("i18n_content");
    const refused = [
      ...r.emulator.callsTo("POST", /\/reply$/),
      ...r.emulator.callsTo("PATCH", "/open-apis/im/v1/messages/"),
    ].filter((call) => call.code === 230099);
    expect(refused).toHaveLength(1);
  });
});
