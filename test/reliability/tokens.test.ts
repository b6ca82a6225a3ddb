import { execFile } from "node:child_process";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.ts";
import { signToken } from "../../src/auth/token.ts";
import { loadConfig } from "../../src/config.ts";
import { createCore } from "../../src/core.ts";
import { createLogger } from "../../src/logger.ts";
import { openDatabase } from "../../src/store/db.ts";
import { SESSION_COOKIE } from "../../src/web/cookie.ts";
import { mountSessionPages } from "../../src/web/session-page.ts";
import { createScriptedAskAgent, eventually, TestClient } from "../helpers/harness.ts";
import { record } from "./helpers/env.ts";

/**
 * Issue 14 item 12: tokens that can be revoked, browser sign-ins that do not last a month, and a signing
 * secret long enough. The revocation goes through the real CLI (`npm run token -- --revoke`) in its own
 * process, against the DATA_DIR of a bot that is running.
 */

const ALICE = "ou_alice";
const HEARTBEAT_MS = 1_000;
const run = promisify(execFile);

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await stop?.();
  stop = undefined;
});

async function startBot() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-tokens-"));
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const logger = createLogger({ level: "silent" });
  const secret = "tokens-test-secret-0123456789abcdef";
  const core = await createCore({
    db,
    logger,
    agent: createScriptedAskAgent(),
    tools: [],
    askTimeoutMs: 60_000,
    authSecret: secret,
    heartbeatIntervalMs: HEARTBEAT_MS,
  });
  const { server } = createApp({
    ...core,
    logger,
    routes: [
      (app) =>
        mountSessionPages(app, {
          runs: core.runs,
          authSecret: secret,
          revocations: core.revocations,
          now: Date.now,
          logger,
          localUsers: [{ openId: ALICE, name: "Alice" }],
        }),
    ],
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  const clients: TestClient[] = [];
  stop = async () => {
    for (const client of clients) client.ws.terminate();
    await core.hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    db.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const base = `http://127.0.0.1:${port}`;
  return {
    dataDir,
    core,
    base,
    secret,
    token: (issuedAt = Date.now()) => signToken(secret, ALICE, Date.now() + 3_600_000, issuedAt),
    async upgradeStatus(token: string): Promise<number> {
      const { WebSocket } = await import("ws");
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${token}`);
      ws.on("error", () => undefined);
      return new Promise((resolve) => {
        ws.once("open", () => {
          clients.push(new TestClient(ws));
          resolve(101);
        });
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      });
    },
    lastClient: () => clients.at(-1),
    me: async (token: string) =>
      (await fetch(`${base}/auth/me`, { headers: { cookie: `${SESSION_COOKIE}=${token}` } })).status,
  };
}

describe("revoking a user's tokens", () => {
  it("refuses every earlier token on the page and the socket, closes open sockets, and keeps new ones working", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const bot = await startBot();
    const before = bot.token(Date.now() - 1000);
    expect(await bot.upgradeStatus(before)).toBe(101);
    const open = bot.lastClient();
    expect(await bot.me(before)).toBe(200);

    const cli = path.resolve("src/cli/token.ts");
    const startedAt = performance.now();
    const { stdout } = await run(process.execPath, ["--import", "tsx", cli, "--revoke", ALICE], {
      env: { ...process.env, DATA_DIR: bot.dataDir, FEISHU_APP_ID: "", AUTH_SECRET: "" },
    });
    const cliMs = Math.round(performance.now() - startedAt);
    expect(stdout).toContain(`revoked every token of ${ALICE}`);

    expect(await bot.upgradeStatus(before)).toBe(401);
    expect(await bot.me(before)).toBe(401);
    // The socket opened before the revocation goes at the next heartbeat, with a reason.
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    expect(await open?.closed()).toEqual({ code: 1008, reason: "token expired or revoked" });
    await eventually(() => expect(bot.core.hub.connectionCount(ALICE)).toBe(0));

    const after = bot.token();
    expect(await bot.upgradeStatus(after)).toBe(101);
    expect(await bot.me(after)).toBe(200);
    record("tokens: revoke through the CLI while the bot runs", { cliMs, refusedAfter: ["ws", "page"] });
  }, 20_000);
});

describe("browser sign-in", () => {
  it("lasts 12 hours by default, not 30 days", async () => {
    const bot = await startBot();
    const response = await fetch(`${bot.base}/auth/local?user=${ALICE}`, { redirect: "manual" });
    expect(response.status).toBe(303);
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/Max-Age=43200\b/);
  });

  it("turns a 30-day personal link into a 12-hour cookie", async () => {
    const bot = await startBot();
    const link = signToken(bot.secret, ALICE, Date.now() + 30 * 24 * 3_600_000);
    const response = await fetch(`${bot.base}/auth/link?token=${link}`, { redirect: "manual" });
    expect(response.status).toBe(303);
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/Max-Age=43200\b/);
    expect(cookie).not.toContain(link);
  });

  it("is configurable with SIGNIN_TTL_HOURS, within 1 hour and 30 days", () => {
    expect(loadConfig({ SIGNIN_TTL_HOURS: "2" }).signInTtlMs).toBe(2 * 3_600_000);
    expect(() => loadConfig({ SIGNIN_TTL_HOURS: "0" })).toThrow(/SIGNIN_TTL_HOURS must be at least 1/);
  });
});

describe("AUTH_SECRET", () => {
  it("must be at least 32 characters, with a message that says how to make one", () => {
    expect(() => loadConfig({ AUTH_SECRET: "x".repeat(31) })).toThrow(
      /AUTH_SECRET must be at least 32 characters \(e\.g\. openssl rand -base64 32\)/,
    );
    expect(loadConfig({ AUTH_SECRET: "x".repeat(32) }).authSecret).toBe("x".repeat(32));
  });
});
