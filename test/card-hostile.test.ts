import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { validateCard } from "../src/cards/rules.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * Hostile markdown reaching a card, through the channel on the fake messenger and fake time: in the model's
 * answer, in a person's 其他 answer and in a person's message. Each card is the one the fake stored after the
 * emulator's own content checks (Feishu accepted it), and the assertions read what a person sees in it.
 */

const ALICE = "ou_alice000000000000000000000000000";
const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

/** Every markdown text of a card, in order, including those inside forms, panels and columns. */
function markdownOf(card: Card): string[] {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (typeof value !== "object" || value === null) return;
    if ("tag" in value && value.tag === "markdown" && "content" in value && typeof value.content === "string")
      out.push(value.content);
    for (const child of Object.values(value)) walk(child);
  };
  walk(card.body.elements);
  return out;
}

const HOSTILE_MODEL = [
  "**部署完成** ![架构图](https://example.com/arch.png)",
  "[内网控制台](javascript:alert(1)) · [日志](file:///var/log/app.log)",
  "详见https://example.com/docs/部署说明中文",
  "[查询](https://example.com/q?t=31/12/2014 23:59:59)",
  "<at id=all></at> <link url='https://x.org'>链接</link>",
  "```dockerfile",
  "FROM node:20",
  "```",
].join("\n");

eachTransport(() => {
  describe("hostile markdown reaching a card", () => {
    it("in the model's answer: images, bad links, URLs glued to Chinese and fence languages come out acceptable", async () => {
      const agent: Agent = { name: "hostile-model", run: async () => ({ text: HOSTILE_MODEL }) };
      const r = await startFakeChannel({ agent });
      rigs.push(r);
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      }, "the completed card");
      expect(validateCard(card)).toMatchObject({ ok: true });
      const result = markdownOf(card).find((text) => text.startsWith("**结果**"));
      expect(result).toBe(
        [
          "**结果**",
          "**部署完成** [架构图](https://example.com/arch.png)",
          "内网控制台 · 日志",
          "详见https://example.com/docs/ 部署说明中文",
          "[查询](https://example.com/q?t=31%2F12%2F2014%2023%3A59%3A59)",
          "&#60;at id=all&#62;&#60;/at&#62; &#60;link url='https&#58;//x.org'&#62;链接&#60;/link&#62;",
          "```docker_file",
          "FROM node:20",
          "```",
        ].join("\n"),
      );
    });

    it("in a 其他 answer: shown as the text that was typed, in the steps and in the answer", async () => {
      const r = await startFakeChannel({ askPing: false });
      rigs.push(r);
      const userMessageId = await r.send({
        chatType: "group",
        chatId: "oc_team",
        senderOpenId: ALICE,
        text: "部署",
        mentionBot: true,
      });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return formsOn(c).length > 0 && c;
      }, "a form");
      const requestId = requestIdsOn(card)[0] ?? "";
      const typed = "**系统通知** 请点 [这里](https://evil.example) <font color=red>立即</font>";
      await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: {
          kind: "feishu_ask",
          act: "submit",
          sessionId: r.core.registry.get(requestId)?.sessionId ?? "",
          requestId,
          sender: ALICE,
        },
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_q1: [], ask0_c1: typed },
      });
      const final = await r.until(() => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      }, "the completed card");
      expect(validateCard(final)).toMatchObject({ ok: true });
      const shown =
        "&#42;&#42;系统通知&#42;&#42; 请点 &#91;这里&#93;(https&#58;//evil.example) &#60;font color=red&#62;立即&#60;/font&#62;";
      const texts = markdownOf(final).join("\n");
      expect(texts).toContain(`按补充说明处理：${shown.slice(0, 30)}`);
      expect(texts).toContain(`其他：${shown}`);
      expect(texts).not.toContain("<font");
      expect(texts).not.toContain("](https://evil");
    });

    it("in a person's message: the queued card quotes it as text", async () => {
      const r = await startFakeChannel({ askPing: false });
      rigs.push(r);
      const first = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
      const cardId = await r.progressCard(first);
      await r.until(() => formsOn(r.cardOf(cardId)).length > 0, "the first task waiting on its form");
      const typed = "# 系统通知\n---\n**管理员**: 打开 [链接](https://evil.example) <at id=all></at>";
      const second = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: typed });
      const queuedId = await r.progressCard(second);
      const queued = r.cardOf(queuedId);
      expect(validateCard(queued)).toMatchObject({ ok: true });
      // (The message arrives on one line; its markdown syntax is shown, not applied.)
      expect(markdownOf(queued)[0]).toMatch(
        /^> &#35; 系统通知 --- &#42;&#42;管理员&#42;&#42;: 打开 &#91;链接&#93;\(https&#58;\/\/evil\.example\) &#60;at id=all&#62;&#60;\/at&#62;\n\n/,
      );
    });
  });
});
