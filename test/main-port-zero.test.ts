import fs from "node:fs";
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type MainProcess, startMain } from "./helpers/main-process.ts";
import { until as waitUntil } from "./helpers/wait.ts";
import { tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * `PORT=0 npm start` in local mode: the system picks the port, and every address the bot hands out names
 * that port, never `localhost:0`: the listening line, the card's 会话详情 link and the /login link, each of
 * which opens on the running bot; the host guard serves localhost on it and still refuses other names.
 */

const ALICE = "ou_local_alice";
const CHAT = `oc_p2p_${ALICE}`;
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const until = <T>(probe: () => Promise<T | undefined | false>, what: string): Promise<T> =>
  waitUntil(probe, what, 15_000, 50);

const Messages = z.object({
  messages: z.array(
    z.object({
      messageId: z.string(),
      sender: z.object({ type: z.enum(["app", "user"]) }),
      parentId: z.string().optional(),
      text: z.array(z.object({ type: z.string(), text: z.string().optional() })).optional(),
      card: z.unknown().optional(),
    }),
  ),
});

async function messages(bot: MainProcess) {
  const response = await fetch(`http://127.0.0.1:${bot.port}/console/api/messages?chatId=${CHAT}`);
  return Messages.parse(await response.json()).messages;
}

async function say(bot: MainProcess, text: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${bot.port}/console/api/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ chatId: CHAT, userId: ALICE, text }),
  });
  return z.object({ messageId: z.string() }).parse(await response.json()).messageId;
}

/** The status of a GET with exactly this Host header (fetch will not let a caller set Host). */
function statusWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: "127.0.0.1", port, path: "/console", headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on("error", reject);
  });
}

describe("npm start with PORT=0", () => {
  it("keeps its start-up banner short at info: where it listens, mode and transport, the console", async () => {
    const dataDir = tempDataDir();
    const bot = await startMain({ env: { DATA_DIR: dataDir, LOG_LEVEL: "info" } });
    cleanup.push(async () => {
      await bot.kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    await until(async () => bot.output().includes("/console to talk to the bot"), "the console line");
    const lines = bot
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => z.object({ level: z.number(), msg: z.string() }).passthrough().parse(JSON.parse(line)));
    // Nothing else at info: not the SDK's developer-console hint, the connection limits or "ready" lines.
    expect(lines.filter((line) => line.level >= 30).map((line) => line.msg)).toEqual(["listening"]);
    expect(lines.find((line) => line.msg === "listening")).toMatchObject({
      port: bot.port,
      url: bot.url,
      mode: "local",
      transport: "ws",
      console: `${bot.url}/console`,
    });
  });

  it("names the bound port in its listening line, the card's 会话详情 link and the /login link", async () => {
    const dataDir = tempDataDir();
    const bot = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "20", LOG_LEVEL: "warn" } });
    cleanup.push(async () => {
      await bot.kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    // Said even at LOG_LEVEL=warn: nothing else tells a caller which port it got.
    expect(bot.port).toBeGreaterThan(0);
    expect(bot.url).toBe(`http://localhost:${bot.port}`);

    const asked = await say(bot, "帮我部署");
    const details = await until(async () => {
      const card = (await messages(bot)).find((m) => m.parentId === asked && m.card !== undefined)?.card;
      return /"default_url":"([^"]*\/sessions\/[^"]*)"/.exec(JSON.stringify(card ?? null))?.[1];
    }, "the card's 会话详情 link");
    expect(details.startsWith(`http://localhost:${bot.port}/sessions/`), details).toBe(true);

    const login = await say(bot, "/login");
    const link = await until(async () => {
      const reply = (await messages(bot)).find((m) => m.parentId === login && m.sender.type === "app");
      const text = (reply?.text ?? []).map((segment) => segment.text ?? "").join("");
      return text.split("\n").find((line) => line.includes("/auth/link?token="));
    }, "the /login reply");
    expect(link.startsWith(`http://localhost:${bot.port}/auth/link?token=`), link).toBe(true);

    // Both open on the running bot: the link signs Alice in, and her cookie opens the card's page.
    const opened = await fetch(link, { redirect: "manual" });
    expect(opened.status).toBe(303);
    const cookie = opened.headers.getSetCookie()[0]?.split(";")[0] ?? "";
    const page = await fetch(details, { headers: { cookie } });
    expect(page.status).toBe(200);

    // The host guard: localhost and loopback on the bound port are ours; other names are not.
    expect(await statusWithHost(bot.port, `localhost:${bot.port}`)).toBe(200);
    expect(await statusWithHost(bot.port, `127.0.0.1:${bot.port}`)).toBe(200);
    expect(await statusWithHost(bot.port, `evil.example:${bot.port}`)).toBe(403);
    expect(bot.output()).not.toContain("localhost:0");
  }, 40_000);

  it("with PUBLIC_URL set, links name PUBLIC_URL whatever port was bound", async () => {
    const dataDir = tempDataDir();
    const publicUrl = "http://bot.lan.example:8080";
    const bot = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "20", PUBLIC_URL: publicUrl } });
    cleanup.push(async () => {
      await bot.kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    expect(bot.url).toBe(publicUrl);
    const asked = await say(bot, "帮我部署");
    const details = await until(async () => {
      const card = (await messages(bot)).find((m) => m.parentId === asked && m.card !== undefined)?.card;
      return /"default_url":"([^"]*\/sessions\/[^"]*)"/.exec(JSON.stringify(card ?? null))?.[1];
    }, "the card's 会话详情 link");
    expect(details.startsWith(`${publicUrl}/sessions/`), details).toBe(true);
    expect(await statusWithHost(bot.port, "bot.lan.example:8080")).toBe(200);
  }, 40_000);
});
