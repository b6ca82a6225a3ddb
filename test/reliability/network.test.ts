import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { localWebhookKey } from "../../src/auth/secret.ts";
import { signToken } from "../../src/auth/token.ts";
import { type Emulator, encryptBody, signBody, startEmulator } from "../../src/local/emulator/index.ts";
import { type BotProcess, startBot, tempDataDir } from "./helpers/bot-process.ts";
import { record, until } from "./helpers/env.ts";
import { ALICE, AUTH_SECRET, ENCRYPT_KEY } from "./helpers/stack.ts";

/**
 * Hardening II, network: what reaches the bot in local mode (loopback only, its own webhook key), which
 * Host names it answers to (DNS rebinding), shown against the real entry point as a child process.
 */

/** Each test starts the real entry point (tsx) once or twice; a busy machine makes that slow. */
const PROCESS_TEST_MS = 60_000;
const running: { bot?: BotProcess; emulator: Emulator }[] = [];
afterEach(async () => {
  for (const { bot, emulator } of running.splice(0)) {
    await bot?.kill();
    await emulator.close();
  }
});

/** The real `npm start` in local mode (no FEISHU_APP_ID): it starts its own emulator inside. */
async function localBot(env: Record<string, string> = {}, dataDir = tempDataDir()) {
  // startBot wants an emulator for feishu mode; local mode ignores it once FEISHU_APP_ID is blank.
  const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
  const entry: { bot?: BotProcess; emulator: Emulator } = { emulator };
  running.push(entry);
  entry.bot = await startBot({ emulator, dataDir, env: { FEISHU_APP_ID: "", ...env } });
  return { bot: entry.bot, dataDir };
}

/** A plain request with exactly this Host header (fetch will not let a caller set Host). */
function get(
  port: number,
  pathname: string,
  host: string,
  address = "127.0.0.1",
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: address, port, path: pathname, headers: { host } }, (response) => {
      let body = "";
      response.on("data", (chunk) => {
        body += String(chunk);
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.setTimeout(5000, () => request.destroy(new Error("no answer within 5 s")));
    request.on("error", reject);
  });
}

/** Resolves "open", or the HTTP status the upgrade was refused with. */
function upgrade(port: number, token: string, host: string): Promise<"open" | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${token}`, { headers: { host } });
    const timer = setTimeout(() => reject(new Error("upgrade neither opened nor was refused")), 5000);
    ws.on("open", () => {
      clearTimeout(timer);
      ws.close();
      resolve("open");
    });
    ws.on("unexpected-response", (_req, res) => {
      clearTimeout(timer);
      resolve(res.statusCode ?? 0);
    });
    ws.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function connects(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address, port });
    socket.setTimeout(2000, () => socket.destroy());
    socket.on("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
    socket.on("close", () => resolve(false));
  });
}

function urlCheck(key: string): { body: string; headers: Record<string, string> } {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = `nonce-${Math.random().toString(36).slice(2)}`;
  const body = JSON.stringify({
    encrypt: encryptBody(key, JSON.stringify({ type: "url_verification", challenge: "c-42" })),
  });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-lark-request-timestamp": timestamp,
      "x-lark-request-nonce": nonce,
      "x-lark-signature": signBody(key, timestamp, nonce, body),
    },
  };
}

describe("local mode on the network", () => {
  it(
    "listens on loopback only, warns when HOST widens it, and signs webhooks with its DATA_DIR's own key",
    async () => {
      const { bot, dataDir } = await localBot();
      // Linux routes all of 127/8 to lo: a socket bound to every interface accepts 127.0.0.2, one on 127.0.0.1 does not.
      expect(await connects("127.0.0.1", bot.port)).toBe(true);
      expect(await connects("127.0.0.2", bot.port)).toBe(false);
      // /healthz answers before the listening line: local mode logs it once the long connection is up.
      await until(() => bot.output().includes('"host":"127.0.0.1"'), "the listening line", 10_000);

      // The key is the DATA_DIR's, owner-only, not the constant the source used to ship.
      const keyFile = path.join(dataDir, "webhook-key");
      expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
      const key = localWebhookKey(dataDir);
      expect(key).not.toBe("local-mode-encrypt-key");
      expect(localWebhookKey(tempDataDir())).not.toBe(key);
      const post = (wire: { body: string; headers: Record<string, string> }) =>
        fetch(`http://127.0.0.1:${bot.port}/feishu/events`, { method: "POST", ...wire });
      expect((await post(urlCheck("local-mode-encrypt-key"))).status).toBe(401);
      const good = await post(urlCheck(key));
      expect(good.status).toBe(200);
      expect(await good.json()).toEqual({ challenge: "c-42" });

      const wide = await localBot({ HOST: "0.0.0.0" });
      expect(await connects("127.0.0.2", wide.bot.port)).toBe(true);
      await until(() => wide.bot.output().includes("listening beyond loopback"), "the warning", 5000);
    },
    PROCESS_TEST_MS,
  );

  it(
    "refuses a Host that is not ours (DNS rebinding) on pages, the API and the WebSocket upgrade",
    async () => {
      const { bot } = await localBot({ PUBLIC_URL: "http://bot.lan.example:8080" });
      const token = signToken(AUTH_SECRET, ALICE, Date.now() + 60_000); // startBot sets AUTH_SECRET
      const ours = [
        `localhost:${bot.port}`,
        `127.0.0.1:${bot.port}`,
        "app.localhost",
        "bot.lan.example:8080",
      ];
      const foreign = [
        "evil.example",
        `evil.example:${bot.port}`,
        "localhost.evil.example",
        "127.0.0.1@evil",
        "bot.lan.example.evil.example",
      ];
      const tally = { served: 0, refused: 0 };
      for (const host of ours) {
        expect((await get(bot.port, "/console", host)).status, host).toBe(200);
        expect(await upgrade(bot.port, token, host), host).toBe("open");
        tally.served += 2;
      }
      for (const host of foreign) {
        for (const route of ["/console", "/healthz", "/metrics", "/feishu/events", "/sessions/anything"]) {
          const answer = await get(bot.port, route, host);
          expect(answer.status, `${route} Host "${host}"`).toBe(403);
          tally.refused += 1;
        }
        expect(await upgrade(bot.port, token, host), host).toBe(403);
        tally.refused += 1;
      }
      record("host check (local mode)", tally);
    },
    PROCESS_TEST_MS,
  );

  it(
    "feishu mode: the webhook is served whatever the Host (the signature guards it), other routes are not",
    async () => {
      const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
      const entry: { bot?: BotProcess; emulator: Emulator } = { emulator };
      running.push(entry);
      const bot = await startBot({
        emulator,
        dataDir: tempDataDir(),
        env: { PUBLIC_URL: "https://bot.example.com" },
      });
      entry.bot = bot;
      expect((await get(bot.port, "/healthz", "bot.example.com")).status).toBe(200);
      expect((await get(bot.port, "/healthz", "10.0.0.7:3000")).status).toBe(200); // a probe by IP
      expect((await get(bot.port, "/healthz", "evil.example")).status).toBe(403);
      // An unsigned POST reaches the webhook, which refuses it as unsigned: 401, not the Host guard's 403.
      const hook = await new Promise<number>((resolve, reject) => {
        const request = http.request(
          {
            host: "127.0.0.1",
            port: bot.port,
            path: "/feishu/events",
            method: "POST",
            headers: { host: "upstream" },
          },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        request.on("error", reject);
        request.end("{}");
      });
      expect(hook).toBe(401);
    },
    PROCESS_TEST_MS,
  );
});
