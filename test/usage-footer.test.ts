import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { buildProgressCard } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { loadConfig } from "../src/config.ts";
import { addUsage, usageText } from "../src/domain/usage.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { migrate } from "../src/store/db.ts";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { Store } from "../src/store/repos.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { en, zh } from "../src/strings/index.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText } from "./helpers/feishu.ts";

/**
 * The usage footer (issue 30): an ended card's last line says how long the run took and what its model
 * requests cost, in each language's number format, leaving out whatever is unknown and never guessing.
 */

const T0 = Date.UTC(2026, 10, 30, 2, 0, 0);
const ended: ProgressView = {
  sessionId: "s1",
  runId: "run1",
  senderId: "ou_alice",
  title: "部署",
  status: "completed",
  steps: [{ title: "扫描", status: "done" }],
  text: "完成",
  startedAt: T0,
  endedAt: T0 + 12_000,
};

/** The card's last element when it is the footer (a notation-size markdown line). */
function footerOf(card: Card): string | undefined {
  const last = card.body.elements.at(-1);
  return last?.tag === "markdown" && last.text_size === "notation" ? last.content : undefined;
}
const subtitleOf = (card: Card) => card.header?.subtitle?.content;

eachTransport(() => {
  describe("the usage footer on an ended card", () => {
    const usage = { inputTokens: 12_345, outputTokens: 678, cachedTokens: 10_000, model: "gpt-4o" };

    it("says time, tokens and model in Chinese, and the header no longer repeats the time", () => {
      const card = buildProgressCard({ ...ended, usage }, [], { strings: zh });
      expect(footerOf(card)).toBe("用时 12 秒 · ↑12,345 ↓678 · gpt-4o");
      expect(subtitleOf(card)).toBeUndefined();
    });

    it("says the same in English", () => {
      const card = buildProgressCard({ ...ended, status: "failed", error: "boom", usage }, [], {
        strings: en,
      });
      expect(footerOf(card)).toBe("Took 12 s · ↑12,345 ↓678 · gpt-4o");
    });

    it("leaves out each unknown part, in both languages", () => {
      const cases: [ProgressView["usage"], string, string][] = [
        [{ inputTokens: 5 }, "用时 12 秒 · ↑5", "Took 12 s · ↑5"],
        [{ outputTokens: 1_000_000 }, "用时 12 秒 · ↓1,000,000", "Took 12 s · ↓1,000,000"],
        [{ model: "qwen" }, "用时 12 秒 · qwen", "Took 12 s · qwen"],
      ];
      for (const [given, inZh, inEn] of cases) {
        expect(footerOf(buildProgressCard({ ...ended, usage: given }, [], { strings: zh }))).toBe(inZh);
        expect(footerOf(buildProgressCard({ ...ended, usage: given }, [], { strings: en }))).toBe(inEn);
      }
    });

    it("shows no footer when nothing is known (cached tokens alone say nothing of the run), and the time stays in the header", () => {
      for (const given of [undefined, {}, { cachedTokens: 3 }]) {
        const card = buildProgressCard({ ...ended, ...(given ? { usage: given } : {}) }, [], { strings: zh });
        expect(footerOf(card)).toBeUndefined();
        expect(subtitleOf(card)).toBe("用时 12 秒");
      }
    });

    it("shows no footer while the run is under way", () => {
      const { endedAt: _ended, ...running } = ended;
      const card = buildProgressCard({ ...running, status: "running", usage }, [], { strings: zh });
      expect(footerOf(card)).toBeUndefined();
    });

    it("carries the footer in every language of a shared card", () => {
      const card = buildProgressCard({ ...ended, usage }, []);
      const last = card.body.elements.at(-1);
      expect(last).toMatchObject({
        tag: "markdown",
        i18n_content: {
          zh_cn: "用时 12 秒 · ↑12,345 ↓678 · gpt-4o",
          en_us: "Took 12 s · ↑12,345 ↓678 · gpt-4o",
        },
      });
    });
  });

  describe("a run's usage sums", () => {
    it("adds what every request reported and forgets a count one request left out", () => {
      const first = addUsage(undefined, { inputTokens: 10, outputTokens: 2, model: "a" });
      expect(first).toEqual({ inputTokens: 10, outputTokens: 2, model: "a" });
      const second = addUsage(first, { inputTokens: 5, model: "b" });
      expect(second).toEqual({ inputTokens: 15, model: "a + b" });
      expect(addUsage(second, { inputTokens: 1, outputTokens: 9, model: "a" })).toEqual({
        inputTokens: 16,
        model: "a + b",
      });
    });

    it("writes the page's line without the time", () => {
      expect(usageText({ inputTokens: 1234, outputTokens: 5, model: "m" }, "zh-CN")).toBe("↑1,234 ↓5 · m");
      expect(usageText({}, "en")).toBeUndefined();
    });
  });

  describe("CARD_FOOTER", () => {
    it("is on unless turned off", () => {
      expect(loadConfig({}).cardFooter).toBe(true);
      expect(loadConfig({ CARD_FOOTER: "off" }).cardFooter).toBe(false);
      expect(() => loadConfig({ CARD_FOOTER: "maybe" })).toThrow(/CARD_FOOTER accepts on or off/);
    });
  });

  describe("the runs table's usage columns", () => {
    it("keeps the runs of an older file, with no usage, and stores a new run's", async () => {
      const raw = new Database(":memory:");
      const before = MIGRATIONS.length - 1;
      raw.exec(MIGRATIONS.slice(0, before).join(";\n"));
      raw.pragma(`user_version = ${before}`);
      raw.exec(`INSERT INTO sessions (id, channel, chat_type, workspace, owner_id, title, created_at, updated_at)
                VALUES ('s1', 'feishu', 'private', '/w', 'ou_a', 't', 1, 1);
                INSERT INTO runs (id, session_id, sender_id, input, status, steps_json, started_at)
                VALUES ('old', 's1', 'ou_a', 'hi', 'completed', '[]', 1);`);
      migrate(raw);
      const store = new Store(sqliteSql(raw), () => 1);
      const old = await store.getRun("old");
      expect(old?.status).toBe("completed");
      expect(old?.usage).toBeUndefined();
      const usage = { inputTokens: 3, outputTokens: 4, cachedTokens: 0, model: "m" };
      await store.saveRun({ ...(old as NonNullable<typeof old>), usage });
      expect((await store.getRun("old"))?.usage).toEqual(usage);
      raw.close();
    });
  });

  describe("the footer on the channel's cards", () => {
    const rigs: FakeChannelRig[] = [];
    afterEach(async () => {
      for (const r of rigs.splice(0)) await r.stop();
      vi.useRealTimers();
    });
    /** Reports two requests' usage, as a model agent does, and answers. */
    const agent: Agent = {
      name: "counting",
      async run(ctx) {
        ctx.reportUsage?.({ inputTokens: 1000, outputTokens: 200, model: "gpt-4o" });
        ctx.reportUsage?.({ inputTokens: 234, outputTokens: 66, model: "gpt-4o" });
        return { text: "好了" };
      },
    };
    async function finalCard(cardFooter?: boolean): Promise<string> {
      vi.useFakeTimers();
      const r = await startFakeChannel({
        agent,
        tools: [],
        ...(cardFooter !== undefined ? { cardFooter } : {}),
      });
      rigs.push(r);
      const sent = r.send({ chatType: "p2p", senderOpenId: "ou_alice", text: "hi" });
      const cardId = await r.progressCard(sent);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      }, "the completed card");
      return cardText(card);
    }

    it("shows the run's sums once it ended", async () => {
      expect(await finalCard()).toMatch(/用时 \d+ 秒 · ↑1,234 ↓266 · gpt-4o/);
    });

    it("is gone with CARD_FOOTER=off", async () => {
      const text = await finalCard(false);
      expect(text).not.toContain("↑");
      expect(text).toMatch(/用时 \d+ 秒/);
    });
  });
});
