import { afterEach, describe, expect, it, vi } from "vitest";
import { DEMO_QUESTIONS_EN } from "../src/asks/demo-questions.ts";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { bilingual, en, zh } from "../src/strings/index.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { requestIdsOn } from "./helpers/feishu.ts";
import { foldHeaderTags } from "./helpers/header-tags.ts";
import { allShownIn } from "./helpers/local-datetime.ts";

/**
 * Every text the bot writes on a shared card is there in every language the card lists (issue 19). The check
 * is this file's own, not the builder's: it walks the JSON for every `content`, wherever it sits, and asks
 * for an `i18n_content` with exactly `config.locales`, whose English has no Chinese in it and whose Chinese
 * has no English words. Only the texts this test wrote as a person's or a model's may stand alone.
 */

const ALICE = "ou_alice000000000000000000000000000";
// 23:50 in Asia/Shanghai on 30 November: a deadline 20 minutes on falls on the next day, so it has a date.
const NOW = Date.UTC(2026, 10, 30, 15, 50);

/** What people and the model wrote: shown as written, in whatever language they used. */
const WRITTEN = {
  title: "Move the billing service to the new cluster",
  stepTitle: "Read the schema",
  stepSummary: "12 tables",
};
const ask: CardAsk = {
  requestId: "req_1",
  questions: [DEMO_QUESTIONS_EN.deploy, DEMO_QUESTIONS_EN.features],
};
const writtenTexts = [
  ...Object.values(WRITTEN),
  ...ask.questions.flatMap((q) => [
    q.question,
    q.header,
    ...q.options.flatMap((o) => [o.label, o.description ?? ""]),
  ]),
].filter((text) => text !== "");

const groupCard: ProgressView = {
  sessionId: "feishu-cli_x-group-oc_team",
  runId: "run_1",
  senderId: ALICE,
  title: WRITTEN.title,
  status: "running",
  steps: [
    { title: WRITTEN.stepTitle, status: "done", summary: WRITTEN.stepSummary },
    // The step of the question that timed out: the bot's words, recorded in the bot's language and in all.
    {
      title: zh.model.askTitle,
      status: "failed",
      summary: zh.askTimedOutSummary,
      words: { title: bilingual.model.askTitle, summary: bilingual.askTimedOutSummary },
    },
  ],
  startedAt: NOW - 60_000,
  detailsUrl: "https://bot.example.com/sessions/x/runs/run_1",
  chatType: "group",
  // The question before this one timed out; the new one is due after midnight in the configured zone.
  notice: { kind: "timeout" },
  deadline: { at: NOW + 20 * 60_000, timeZone: "Asia/Shanghai", now: NOW },
  extendMinutes: 15,
  queuedBehind: 2,
};

interface Problem {
  path: string;
  problem: string;
}

const HAN = /\p{Script=Han}/u;
/** An English word of three letters or more: none belongs in the Chinese text but what people wrote. */
const ENGLISH_WORD = /[A-Za-z]{3,}/;

/** The bot's words in a text: without what people wrote, mentions, link targets and code (a preview's). */
function wordsOf(text: string): string {
  let out = text
    .replace(/```[\s\S]*?```/g, "")
    .replace(/<at id=[^>]*><\/at>/g, "")
    .replace(/<local_datetime [^>]*><\/local_datetime>/g, "")
    .replace(/\]\([^)]*\)/g, "]");
  for (const written of writtenTexts) out = out.split(written).join("");
  return out;
}

function problems(card: unknown): Problem[] {
  const found: Problem[] = [];
  const config = isRecord(card) && isRecord(card.config) ? card.config : {};
  const locales = Array.isArray(config.locales) ? config.locales.map(String) : [];
  if (locales.length < 2) found.push({ path: "config.locales", problem: `lists ${locales.length} locales` });
  const walk = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => {
        walk(item, `${path}[${i}]`);
      });
      return;
    }
    if (!isRecord(node)) return;
    if (typeof node.content === "string") checkText(node.content, node.i18n_content, path);
    for (const [key, value] of Object.entries(node))
      if (key !== "i18n_content") walk(value, `${path}.${key}`);
  };
  const checkText = (content: string, i18n: unknown, path: string) => {
    if (!isRecord(i18n)) {
      // Alone is fine for what people wrote (a title, an option's label), with nothing of the bot's around it.
      if (/\p{L}/u.test(wordsOf(content))) found.push({ path, problem: `no i18n_content: ${content}` });
      return;
    }
    const keys = Object.keys(i18n).sort();
    if (keys.join() !== [...locales].sort().join())
      found.push({ path, problem: `i18n_content has ${keys.join()}, the card lists ${locales.join()}` });
    if (i18n[locales[0] ?? ""] !== content)
      found.push({ path, problem: "content is not the first locale's text" });
    const en = i18n.en_us;
    const zh = i18n.zh_cn;
    if (typeof en !== "string" || HAN.test(wordsOf(en)))
      found.push({ path, problem: `English with Chinese in it: ${String(en)}` });
    if (typeof zh !== "string" || ENGLISH_WORD.test(wordsOf(zh)))
      found.push({ path, problem: `Chinese with English words in it: ${String(zh)}` });
  };
  walk(foldHeaderTags(card), "card");
  return found;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The i18n_content of the one text whose content includes `needle`. */
function textWith(card: unknown, needle: string): Record<string, unknown> | undefined {
  let hit: Record<string, unknown> | undefined;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (isRecord(node)) {
      if (typeof node.content === "string" && node.content.includes(needle) && isRecord(node.i18n_content))
        hit = node.i18n_content;
      Object.values(node).forEach(walk);
    }
  };
  walk(foldHeaderTags(card));
  return hit;
}

eachTransport(() => {
  describe("every text on a shared card, in every language it lists", () => {
    it("a group card with a gone question and a dated deadline: Chinese first", () => {
      const card = buildProgressCard(groupCard, [ask], { locales: ["zh_cn", "en_us"] });
      expect(problems(card)).toEqual([]);
      expect(textWith(card, "问题已失效")?.en_us).toMatch(/^The question is no longer open: it timed out/);
      expect(allShownIn(textWith(card, "请在"), "Asia/Shanghai")).toEqual({
        zh_cn: "⏰ 请在 12月1日 00:10 前回答",
        en_us: "⏰ Please answer by Dec 1 00:10",
      });
      // Each viewer reads it in their own zone (<local_datetime>): in Berlin it is still 30 November.
      expect(allShownIn(textWith(card, "请在"), "Europe/Berlin")).toEqual({
        zh_cn: "⏰ 请在 11月30日 17:10 前回答",
        en_us: "⏰ Please answer by Nov 30 17:10",
      });
    });

    it("the same card for a Lark tenant: English first, the Chinese still in Chinese", () => {
      const card = buildProgressCard(groupCard, [ask], { locales: ["en_us", "zh_cn"] });
      expect(problems(card)).toEqual([]);
      expect(allShownIn(textWith(card, "Please answer by"), "Asia/Shanghai")?.zh_cn).toBe(
        "⏰ 请在 12月1日 00:10 前回答",
      );
    });

    it("each gone reason is worded in both languages", () => {
      const reasons: NonNullable<ProgressView["notice"]>[] = [
        { kind: "timeout" },
        { kind: "cancelled" },
        { kind: "answered", surface: "websocket", userId: "ou_alice", at: 0, timeZone: "Asia/Shanghai" },
        { kind: "answered", surface: "mcp" },
      ];
      for (const notice of reasons) {
        const card = buildProgressCard({ ...groupCard, notice }, [], { locales: ["zh_cn", "en_us"] });
        expect(problems(card), notice.kind).toEqual([]);
      }
    });

    it("a failed run's error, when the bot wrote it, in each language; a thrown one as it was thrown", () => {
      const failed: ProgressView = {
        ...groupCard,
        status: "failed",
        error: zh.model.rateLimited(2),
        errorWords: bilingual.model.rateLimited(2),
        endedAt: NOW,
      };
      const card = buildProgressCard(failed, [], { locales: ["zh_cn", "en_us"] });
      expect(problems(card)).toEqual([]);
      expect(textWith(card, "模型服务限流")?.en_us).toContain(en.model.rateLimited(2));
      const thrown = buildProgressCard({ ...failed, error: "ECONNRESET", errorWords: undefined }, [], {
        locales: ["zh_cn", "en_us"],
      });
      expect(textWith(thrown, "ECONNRESET")).toMatchObject({ zh_cn: expect.stringContaining("ECONNRESET") });
      expect(textWith(thrown, "ECONNRESET")?.en_us).toContain("ECONNRESET");
    });

    it("the check itself finds a text worded once, in one language", () => {
      // A card as it was before (issue 19): the notice written in Chinese, and a Chinese date in English text.
      const card = buildProgressCard(groupCard, [ask], { locales: ["zh_cn", "en_us"] });
      const elements = card.body.elements.map((element) =>
        element.tag === "markdown" && element.content.startsWith("问题已失效")
          ? { tag: "markdown", content: element.content }
          : element,
      );
      const found = problems({ ...card, body: { elements } }).map((p) => p.problem);
      expect(found.some((p) => p.startsWith("no i18n_content: 问题已失效"))).toBe(true);
      const mixed = JSON.parse(JSON.stringify(card).replace("Please answer by ", "Please answer by 截止 "));
      expect(problems(mixed).map((p) => p.problem)).toEqual([
        `English with Chinese in it: ${textWith(mixed, "请在")?.en_us}`,
      ]);
    });
  });

  describe("a group card on the channel, in both languages", () => {
    let rig: FakeChannelRig | undefined;
    afterEach(async () => {
      await rig?.stop();
      rig = undefined;
      vi.useRealTimers();
    });

    it("the deadline after midnight and the timed-out notice reach the card in each reader's words", async () => {
      vi.useFakeTimers();
      vi.setSystemTime(NOW);
      const r = await startFakeChannel({ askTimeoutMs: 20 * 60_000, askPing: false });
      rig = r;
      const userMessageId = r.send({
        chatType: "group",
        chatId: "oc_team",
        mentionBot: true,
        senderOpenId: ALICE,
        text: "帮我部署",
      });
      const cardId = await r.progressCard(userMessageId);
      await r.until(() => requestIdsOn(r.cardOf(cardId))[0], "a form");
      // The ask was made a moment after NOW: its deadline is just after 00:10 on 1 December.
      const deadline = await r.until(() => textWith(r.cardOf(cardId), "请在"), "the deadline line");
      const shown = allShownIn(deadline, "Asia/Shanghai");
      expect(shown?.zh_cn).toMatch(/^⏰ 请在 12月1日 00:1\d 前回答$/);
      expect(shown?.en_us).toMatch(/^⏰ Please answer by Dec 1 00:1\d$/);
      // The ask's step is the bot's words too (the demo's other steps are its script, shown as written); on a
      // group card it names whom it waits for, since everyone reads it.
      const waitingStep = textWith(r.cardOf(cardId), "**步骤**");
      expect(waitingStep?.en_us).toContain(`⏳ Waiting for <at id=${ALICE}></at> to answer`);
      expect(waitingStep?.zh_cn).toContain(`⏳ 等待 <at id=${ALICE}></at> 回答`);
      expect(JSON.stringify(r.cardOf(cardId))).not.toContain("等待你的回答");

      vi.advanceTimersByTime(20 * 60_000 + 1_000);
      const notice = await r.until(() => textWith(r.cardOf(cardId), "问题已失效"), "the notice");
      expect(notice.en_us).toMatch(/^The question is no longer open: it timed out/);
      expect(notice.zh_cn).toBe("问题已失效：已超时。未在期限内收到回答，任务已不等回答继续执行");
      const steps = await r.until(() => {
        const found = textWith(r.cardOf(cardId), "**步骤**");
        return String(found?.en_us).includes("❌") && found;
      }, "the failed step");
      expect(steps.en_us).toContain(
        `❌ Waiting for <at id=${ALICE}></at> to answer · The user did not answer in time`,
      );
      expect(steps.zh_cn).toContain(`❌ 等待 <at id=${ALICE}></at> 回答 · 用户未在规定时间内回答`);
    });
  });
});
