import { describe, expect, it } from "vitest";
import { DEMO_QUESTIONS } from "../src/asks/demo-questions.ts";
import { localizeCard, mergeRenderings, SHORT_TEXT } from "../src/cards/i18n.ts";
import type { Card } from "../src/cards/model.ts";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { buildQueuedCard } from "../src/cards/queued.ts";
import { CARD_LIMITS, cardSize, validateCard } from "../src/cards/rules.ts";
import { checkCard } from "../src/local/emulator/card-checker/index.ts";
import { en, zh } from "../src/strings/index.ts";
import { foldHeaderTags } from "./helpers/header-tags.ts";

/** Bilingual cards (cards/i18n.ts): one card, each reader's language, the same callbacks, within budget. */

const view: ProgressView = {
  sessionId: "feishu-cli_x-private-ou_alice",
  runId: "run_1",
  senderId: "ou_alice",
  title: "部署新服务",
  status: "running",
  steps: [{ title: "扫描工作区", status: "done", summary: "42 个文件" }],
  startedAt: 0,
  detailsUrl: "https://bot.example.com/sessions/x/runs/run_1",
};
const ask: CardAsk = { requestId: "req_1", questions: [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features] };

/** Every text object (`{content, i18n_content?}`) of a card, in document order. */
function texts(card: unknown): { content: string; i18n?: Record<string, string> }[] {
  const out: { content: string; i18n?: Record<string, string> }[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === "object") {
      const content: unknown = Reflect.get(node, "content");
      const i18n: unknown = Reflect.get(node, "i18n_content");
      if (typeof content === "string")
        out.push(
          i18n && typeof i18n === "object"
            ? { content, i18n: Object.fromEntries(Object.entries(i18n).map(([k, v]) => [k, String(v)])) }
            : { content },
        );
      for (const [key, value] of Object.entries(node)) if (key !== "i18n_content") walk(value);
    }
  };
  walk(foldHeaderTags(card));
  return out;
}

/** The card as one client reads it: each text replaced by its language's version. */
function readAs(card: Card, locale: "zh_cn" | "en_us"): unknown {
  const pick = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(pick);
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    const i18n: unknown = Reflect.get(node, "i18n_content");
    for (const [key, value] of Object.entries(node)) {
      if (key === "i18n_content") continue;
      const own = i18n && typeof i18n === "object" ? Reflect.get(i18n, locale) : undefined;
      out[key] = key === "content" && typeof own === "string" ? own : pick(value);
    }
    return out;
  };
  const read = pick(foldHeaderTags(card));
  if (read && typeof read === "object") Reflect.deleteProperty(Reflect.get(read, "config") ?? {}, "locales");
  return read;
}

function callbackValues(card: unknown): unknown[] {
  const out: unknown[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === "object") {
      if (Reflect.get(node, "type") === "callback") out.push(Reflect.get(node, "value"));
      Object.values(node).forEach(walk);
    }
  };
  walk(card);
  return out;
}

describe("bilingual cards", () => {
  it("reads, in each language, exactly as that language's own card would", () => {
    const card = buildProgressCard(view, [ask]);
    expect(card.config.locales).toEqual(["zh_cn", "en_us"]);
    const zhOnly = buildProgressCard(view, [ask], { strings: zh });
    const enOnly = buildProgressCard(view, [ask], { strings: en });
    expect(readAs(card, "zh_cn")).toEqual(zhOnly);
    expect(readAs(card, "en_us")).toEqual(enOnly);
    // The bot's language is the `content` a client in any other language falls back to.
    expect(texts(card).map((t) => t.content)).toEqual(texts(zhOnly).map((t) => t.content));
    expect(checkCard(card)).toMatchObject({ ok: true });
    expect(validateCard(card)).toMatchObject({ ok: true });
  });

  it("translates the header's tags with the documented i18n_text_tag_list, one full list per language", () => {
    const card = buildProgressCard(view, []);
    // 标题 page: text_tag_list and i18n_text_tag_list are either-or; translated tags are the i18n one.
    expect(card.header?.text_tag_list).toBeUndefined();
    expect(card.header?.i18n_text_tag_list).toEqual({
      zh_cn: [{ tag: "text_tag", text: { tag: "plain_text", content: "执行中" }, color: "blue" }],
      en_us: [{ tag: "text_tag", text: { tag: "plain_text", content: "Running" }, color: "blue" }],
    });
    expect(checkCard(card)).toMatchObject({ ok: true });
    // One language: the plain list, as before.
    expect(buildProgressCard(view, [], { strings: zh }).header?.text_tag_list).toHaveLength(1);
  });

  it("adds i18n_content only where the languages differ, and carries one set of callback values", () => {
    const card = buildProgressCard(view, [ask]);
    const all = texts(card);
    const title = all.find((t) => t.content === "部署新服务");
    expect(title?.i18n).toBeUndefined();
    const cancel = all.find((t) => t.content === "取消任务");
    expect(cancel?.i18n).toEqual({ zh_cn: "取消任务", en_us: "Cancel task" });
    const submit = all.find((t) => t.content === "提交");
    expect(submit?.i18n).toEqual({ zh_cn: "提交", en_us: "Submit" });
    expect(callbackValues(card)).toEqual(callbackValues(buildProgressCard(view, [ask], { strings: en })));
    expect(callbackValues(card).length).toBeGreaterThan(1);
  });

  it("puts the bot's language first when it is English (a Lark tenant)", () => {
    const card = buildProgressCard(view, [ask], { locales: ["en_us", "zh_cn"] });
    expect(card.config.locales).toEqual(["en_us", "zh_cn"]);
    expect(card.config.summary).toEqual({
      content: "Waiting for your answer to 2 questions",
      i18n_content: { en_us: "Waiting for your answer to 2 questions", zh_cn: "等待你回答 2 个问题" },
    });
  });

  it("keeps long blocks in the bot's language alone when both languages would not fit, and says so", () => {
    // A long result under its heading: 结果 / Result would repeat the whole text in English.
    const long = { ...view, status: "completed" as const, endedAt: 90_000, text: "字".repeat(5000) };
    const card = buildProgressCard(long, []);
    expect(cardSize(card)).toBeLessThanOrEqual(CARD_LIMITS.targetBytes);
    expect(card.config.locales).toEqual(["zh_cn", "en_us"]);
    const result = texts(card).find((t) => t.content.startsWith(zh.card.resultHeading));
    expect(result?.i18n).toBeUndefined();
    // Short texts still come in both: the header tag and the summary.
    expect(card.config.summary?.i18n_content).toEqual({ zh_cn: "已完成", en_us: "Completed" });
    expect(checkCard(card)).toMatchObject({ ok: true });
    // The card says so, in both languages: an English reader knows the rest is in Chinese (issue 23).
    expect(texts(card).at(-1)).toEqual({
      content: zh.card.oneLanguage("zh_cn"),
      i18n: { zh_cn: zh.card.oneLanguage("zh_cn"), en_us: en.card.oneLanguage("zh_cn") },
    });
    expect(en.card.oneLanguage("zh_cn")).toContain("Chinese");
    // Without the budget both versions fit, and the result is bilingual too.
    const roomy = buildProgressCard(long, [], { limits: { maxBytes: 200_000, maxComponents: 200 } });
    const bothResults = texts(roomy).find((t) => t.content.startsWith(zh.card.resultHeading));
    expect(bothResults?.i18n?.en_us?.startsWith(en.card.resultHeading)).toBe(true);
  });

  it("falls back to the bot's language alone when even the short texts do not fit, and says so", () => {
    const tight = buildProgressCard(view, [ask], { limits: { maxBytes: 4000, maxComponents: 200 } });
    expect(cardSize(tight)).toBeLessThanOrEqual(4000);
    // Every text in Chinese alone but the footnote that says so, which both languages read.
    const bilingualTexts = texts(tight).filter((t) => t.i18n !== undefined);
    expect(bilingualTexts).toEqual([
      {
        content: zh.card.oneLanguage("zh_cn"),
        i18n: { zh_cn: zh.card.oneLanguage("zh_cn"), en_us: en.card.oneLanguage("zh_cn") },
      },
    ]);
    expect(tight.config.locales).toEqual(["zh_cn", "en_us"]);
    expect(checkCard(tight)).toMatchObject({ ok: true });
    // A Lark tenant's card left in English says that in Chinese.
    const lark = buildProgressCard(view, [ask], {
      locales: ["en_us", "zh_cn"],
      limits: { maxBytes: 4000, maxComponents: 200 },
    });
    expect(texts(lark).at(-1)?.i18n?.zh_cn).toBe(zh.card.oneLanguage("en_us"));
  });

  it("sends a degraded card (after the platform refused one) in the bot's language alone", () => {
    for (const degraded of [1, 2] as const) {
      const card = buildProgressCard(view, [ask], { degraded });
      expect(card.config.locales).toBeUndefined();
      expect(texts(card).every((t) => t.i18n === undefined)).toBe(true);
      expect(card).toEqual(buildProgressCard(view, [ask], { degraded, strings: zh }));
    }
  });

  it("merges nothing when the renderings differ beyond their words", () => {
    const zhCard = buildProgressCard(view, [], { strings: zh });
    const fewer = buildProgressCard({ ...view, detailsUrl: undefined }, [], { strings: en });
    expect(mergeRenderings(["zh_cn", "en_us"], [zhCard, fewer], Number.POSITIVE_INFINITY)).toBeUndefined();
    // A different callback value is a difference too: the card would act differently per language.
    const otherRun = buildProgressCard({ ...view, runId: "run_2" }, [], { strings: en });
    expect(mergeRenderings(["zh_cn", "en_us"], [zhCard, otherRun], Number.POSITIVE_INFINITY)).toBeUndefined();
    // localizeCard then sends the bot's card as it is.
    let calls = 0;
    const sent = localizeCard(
      (strings) => {
        calls += 1;
        return strings === zh ? zhCard : fewer;
      },
      () => true,
      ["zh_cn", "en_us"],
    );
    // Each language once, and the bot's once more with room for the footnote.
    expect(calls).toBe(3);
    expect({ ...sent, config: zhCard.config, body: { elements: sent.body.elements.slice(0, -1) } }).toEqual(
      zhCard,
    );
    expect(sent.body.elements.at(-1)).toMatchObject({ content: zh.card.oneLanguage("zh_cn") });
  });

  it("keeps texts up to SHORT_TEXT characters bilingual on the middle rung", () => {
    const zhCard = buildQueuedCard(
      { sessionId: "s", queueId: "q", senderId: "ou_a", text: "再跑一遍测试", position: 2, state: "queued" },
      { strings: zh },
    );
    const enCard = buildQueuedCard(
      { sessionId: "s", queueId: "q", senderId: "ou_a", text: "再跑一遍测试", position: 2, state: "queued" },
      { strings: en },
    );
    const merged = mergeRenderings(["zh_cn", "en_us"], [zhCard, enCard], SHORT_TEXT);
    const all = texts(merged);
    expect(all.find((t) => t.content === zh.card.promote)?.i18n?.en_us).toBe(en.card.promote);
    // The quote and its queue line run past SHORT_TEXT in English: that block stays Chinese only.
    const body = all.find((t) => t.content.includes("再跑一遍测试"));
    const englishBody = texts(enCard).find((t) => t.content.includes("再跑一遍测试"))?.content ?? "";
    expect([...englishBody].length).toBeGreaterThan(SHORT_TEXT);
    expect(body).toBeDefined();
    expect(body?.i18n).toBeUndefined();
    // With no limit on length, the same block is bilingual.
    const full = mergeRenderings(["zh_cn", "en_us"], [zhCard, enCard], Number.POSITIVE_INFINITY);
    expect(texts(full).find((t) => t.content.includes("再跑一遍测试"))?.i18n?.en_us).toBe(englishBody);
  });
});
