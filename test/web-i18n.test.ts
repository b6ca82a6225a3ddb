import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { type Core, createCore } from "../src/core.ts";
import { routeInbound } from "../src/feishu/topics.ts";
import { createLogger } from "../src/logger.ts";
import { openDatabase } from "../src/store/db.ts";
import { catalogues, type Locale, selectLocale } from "../src/strings/index.ts";
import { pageStrings, renderPage, scriptJson } from "../src/web/page-strings.ts";
import { fill, PAGE_STRINGS_ID, parsePageStrings } from "../src/web/public/page-text.ts";
import { mountSessionPages } from "../src/web/session-page.ts";
import { createScriptedAskAgent, createSession } from "./helpers/harness.ts";
import { GROUP_TEXT, ROUTE_OPTIONS } from "./helpers/inbound.ts";
import { CJK, visibleTexts } from "./helpers/page-text.ts";

/**
 * The pages people open from a card speak the bot's language (issue 19): the session page as served, its
 * strings block, the sign-in pages, and a chat's session title. The Chinese page stays what it was.
 */

const BEFORE = fs.readFileSync(new URL("./fixtures/session-page-zh-before.html", import.meta.url), "utf8");
const BLOCK = new RegExp(`\\s*<script type="application/json" id="${PAGE_STRINGS_ID}">([^<]*)</script>`);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
  selectLocale("zh_cn");
});

/** The real core and app on 127.0.0.1:0, with the session pages and local sign-in, in `locale`. */
async function startPages(locale: Locale): Promise<string> {
  return (await startPagesWithCore(locale)).base;
}

async function startPagesWithCore(locale: Locale): Promise<{ base: string; core: Core }> {
  selectLocale(locale);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-web-i18n-"));
  const db = openDatabase(path.join(dir, "bot.sqlite"));
  const logger = createLogger({ level: "silent" });
  const core = await createCore({
    db,
    logger,
    agent: createScriptedAskAgent(),
    tools: [],
    askTimeoutMs: 60_000,
    authSecret: "s",
  });
  const localUsers = [
    { openId: "ou_alice", name: "Alice" },
    { openId: "ou_bob", name: "Bob" },
  ];
  const { server } = createApp({
    ...core,
    logger,
    routes: [
      (app) =>
        mountSessionPages(app, { runs: core.runs, authSecret: "s", now: Date.now, logger, localUsers }),
    ],
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stops.push(async () => {
    await core.runner.stop();
    await core.hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, core };
}

async function html(base: string, url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}${url}`, { redirect: "manual" });
  return { status: response.status, text: await response.text() };
}

describe("the session page in the bot's language", () => {
  it("is, in Chinese, the page it was before, byte for byte, plus the strings block", async () => {
    const base = await startPages("zh_cn");
    const { text } = await html(base, "/sessions/any");
    expect(text.replace(BLOCK, "")).toBe(BEFORE);
    expect(visibleTexts(text)).toEqual(visibleTexts(BEFORE));
  });

  it("is, in English, English: lang, title and every visible text, with no Chinese left", async () => {
    const base = await startPages("en_us");
    const { text } = await html(base, "/sessions/any");
    expect(text).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(text).toContain("<title>Session details</title>");
    const texts = visibleTexts(text);
    expect(texts).toEqual(
      expect.arrayContaining(["Session details", "Sign out", "Please sign in", "Steps", "Result", "Topic"]),
    );
    // As many texts as the Chinese page shows: nothing was dropped on the way.
    expect(texts.length).toBe(visibleTexts(BEFORE).length);
    expect(texts.filter((shown) => CJK.test(shown))).toEqual([]);
  });

  it("carries the locale's strings for its script, one catalogue only, and nothing that could end the block", async () => {
    const base = await startPages("en_us");
    const { text } = await html(base, "/sessions/any");
    const json = BLOCK.exec(text)?.[1] ?? "";
    const shipped = parsePageStrings(json);
    expect(shipped).toEqual(pageStrings(catalogues.en_us));
    expect(shipped.panel.submit).toBe("Submit");
    expect(shipped.status.running).toBe(catalogues.en_us.card.status.running);
    expect(json).not.toMatch(CJK);

    const zh = BLOCK.exec((await html(await startPages("zh_cn"), "/sessions/x")).text)?.[1] ?? "";
    expect(parsePageStrings(zh).panel.submit).toBe("提交");
  });

  it("bundles no catalogue into the page's script", async () => {
    const base = await startPages("en_us");
    const script = (await html(base, "/web/session.js")).text;
    // Words only the catalogues hold (a card's button, a model error, an ACP kind) in either language.
    for (const word of ["取消任务", "Cancel task", "OPENAI_API_KEY", "执行命令"])
      expect(script.includes(word), word).toBe(false);
    // The only Chinese words left are icons.ts's default labels, which the console (not this page) uses.
    const chinese = new Set(script.match(/[\u3400-\u9fff]+/g));
    expect([...chinese].sort()).toEqual(["失败", "已停止", "已完成", "未开始", "进行中"].sort());
  });
});

describe("the sign-in pages", () => {
  it("answer a bad link and an unknown local user in English, with lang=en", async () => {
    const base = await startPages("en_us");
    const link = await html(base, "/auth/link?token=nonsense");
    expect(link.status).toBe(401);
    expect(link.text).toContain('<html lang="en">');
    expect(visibleTexts(link.text)).toEqual([
      "Invalid sign-in link",
      "Invalid sign-in link",
      "Send /login to the bot in a private chat to get a new personal link, then open that one.",
    ]);
    const local = await html(base, "/auth/local?user=nobody");
    expect(local.status).toBe(400);
    expect(visibleTexts(local.text)).toContain(
      "Local users you can sign in as: Alice (ou_alice), Bob (ou_bob)",
    );
    expect(visibleTexts(local.text).filter((shown) => CJK.test(shown))).toEqual([]);
  });

  it("answer them in Chinese as before", async () => {
    const base = await startPages("zh_cn");
    const link = await html(base, "/auth/link?token=nonsense");
    expect(link.text).toContain('<html lang="zh-CN">');
    expect(visibleTexts(link.text)).toEqual([
      "登录链接无效",
      "登录链接无效",
      "请在与机器人的私聊中发送 /login，获取新的个人链接后再打开。",
    ]);
    const local = await html(base, "/auth/local?user=nobody");
    expect(visibleTexts(local.text)).toContain("可选的本地用户：Alice（ou_alice）、Bob（ou_bob）");
  });
});

describe("the page's strings", () => {
  const slots = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
  const leaves = (table: object, prefix = ""): [string, string][] =>
    Object.entries(table).flatMap(([key, value]): [string, string][] =>
      typeof value === "string" ? [[`${prefix}${key}`, value]] : leaves(value, `${prefix}${key}.`),
    );

  it("have the same {slots} in English as in Chinese", () => {
    const en = new Map(leaves(catalogues.en_us.web));
    const zhLeaves = leaves(catalogues.zh_cn.web);
    expect(zhLeaves.length).toBeGreaterThan(50);
    const differ = zhLeaves.filter(([key, text]) => slots(text).join() !== slots(en.get(key) ?? "").join());
    expect(differ).toEqual([]);
  });

  it("fill their slots and leave an unknown one visible", () => {
    expect(fill(catalogues.zh_cn.web.page.queuedMore, { count: 3 })).toBe("还有 3 条消息在排队");
    expect(fill(catalogues.en_us.web.panel.headingOf, { index: 1, total: 2 })).toBe(
      "Your answer is needed (1/2)",
    );
    expect(fill("{a} and {b}", { a: "x" })).toBe("x and {b}");
  });

  it("go into a script block with < > & and U+2028/9 escaped, and come back unchanged", () => {
    const hostile = { text: "</script><!-- & \u2028\u2029 -->" };
    const json = scriptJson(hostile);
    expect(json).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(json)).toEqual(hostile);
  });

  it("fill a template only from the catalogue: an unknown name or a missing block is an error", () => {
    const block = `<script type="application/json" id="${PAGE_STRINGS_ID}">null</script>`;
    expect(renderPage(`<p>{{page.title}}</p>${block}`, catalogues.en_us)).toMatch(/^<p>Session details<\/p>/);
    expect(() => renderPage(`<p>{{page.nope}}</p>${block}`, catalogues.en_us)).toThrow(/page\.nope/);
    expect(() => renderPage("<p>{{page.title}}</p>", catalogues.en_us)).toThrow(/expected one/);
  });

  it("refuse a block that is not the page's strings", () => {
    expect(() => parsePageStrings("null")).toThrow(/missing or malformed/);
    expect(() => parsePageStrings('{"lang":"en","page":{}}')).toThrow(/missing or malformed/);
  });
});

describe("a chat's session title", () => {
  const message = GROUP_TEXT;
  const options = ROUTE_OPTIONS;
  const titles = () => [
    routeInbound({ ...message, chatType: "p2p" }, "hi", options).session.title,
    routeInbound(message, "hi", options).session.title,
  ];

  it("follows the bot's locale, with the Chinese titles unchanged", () => {
    expect(titles()).toEqual(["飞书私聊", "飞书群聊"]);
    selectLocale("en_us");
    expect(titles()).toEqual(["Private chat", "Group chat"]);
  });

  it("is shown in the bot's locale for a session stored in the other one; other titles as stored", async () => {
    const { base, core } = await startPagesWithCore("en_us");
    const older = await createSession(core, "ou_alice", { title: "飞书私聊" });
    const group = await createSession(core, "ou_alice", { chatType: "group", title: "飞书群聊" });
    const own = await createSession(core, "ou_alice", { title: "飞书群聊话题：周报" });
    const signIn = await fetch(`${base}/auth/local?user=ou_alice`, { redirect: "manual" });
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    const title = async (id: string) => {
      const response = await fetch(`${base}/api/sessions/${encodeURIComponent(id)}`, { headers: { cookie } });
      const body: unknown = await response.json();
      return typeof body === "object" && body !== null && "title" in body ? body.title : undefined;
    };
    expect(await title(older.id)).toBe("Private chat");
    expect(await title(group.id)).toBe("Group chat");
    expect(await title(own.id)).toBe("飞书群聊话题：周报");
  });
});
