import { execFile } from "node:child_process";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { resolveAuthSecret } from "../src/auth/secret.ts";
import { checkToken, verifyToken } from "../src/auth/token.ts";
import { createCore } from "../src/core.ts";
import { createLogger } from "../src/logger.ts";
import { openDatabase } from "../src/store/db.ts";
import { STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql } from "../src/store/sql.ts";
import { StoreTokenRevocations } from "../src/store/token-revocations.ts";
import { mountSessionPages } from "../src/web/session-page.ts";
import { freePort } from "./helpers/embedded-postgres.ts";
import { createScriptedAskAgent } from "./helpers/harness.ts";
import { usePostgres } from "./helpers/postgres.ts";

/**
 * `npm run token` as a person runs it: the script in a child process, with only the environment given here.
 * What it prints is then used the way a person would: the link opened against a server that shares the
 * DATA_DIR, the token checked with that server's secret.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const pg = usePostgres();
const run = promisify(execFile);
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-token-cli-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function tokenCli(args: string[], env: Record<string, string>, cwd = ROOT) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      // tsx by its resolved URL: the child may run in a directory without node_modules.
      ["--import", import.meta.resolve("tsx"), path.join(ROOT, "src/cli/token.ts"), ...args],
      { cwd, env: { PATH: process.env.PATH ?? "", ...env }, timeout: 20_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** A server with the session pages whose secret is the one local mode keeps in `dataDir`. */
async function startServer(dataDir: string): Promise<string> {
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const logger = createLogger({ level: "silent" });
  const authSecret = resolveAuthSecret(undefined, dataDir);
  const agent = createScriptedAskAgent();
  const core = await createCore({ db, logger, agent, tools: [], askTimeoutMs: 60_000, authSecret });
  const routes = [
    (app: Parameters<typeof mountSessionPages>[0]) =>
      mountSessionPages(app, { runs: core.runs, authSecret, now: Date.now, logger }),
  ];
  const { server } = createApp({ ...core, logger, routes });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    await core.runner.stop();
    await core.hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    db.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("npm run token", () => {
  it("prints a sign-in link that signs the user in on the server, and the bare token last", async () => {
    const dataDir = tempDir();
    const base = await startServer(dataDir);
    const result = await tokenCli(["ou_alice"], { DATA_DIR: dataDir, PUBLIC_URL: base });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    const token = lines.at(-1) ?? "";
    const secret = fs.readFileSync(path.join(dataDir, "auth-secret"), "utf8").trim();
    expect(verifyToken(secret, token, Date.now())).toMatchObject({ ok: true, userId: "ou_alice" });

    expect(result.stdout).not.toContain("PUBLIC_URL is not set");
    const link = lines.map((line) => line.trim()).find((line) => line.startsWith(`${base}/auth/link?`));
    expect(link, result.stdout).toBeDefined();
    const opened = await fetch(link ?? "", { redirect: "manual" });
    expect(opened.status).toBe(303);
    const cookie = opened.headers.getSetCookie()[0]?.split(";")[0] ?? "";
    const me = await fetch(`${base}/auth/me`, { headers: { cookie } });
    expect(await me.json()).toEqual({ userId: "ou_alice" });
    // The link opens once (it used to sign anyone in for 30 days); its token is no bearer token.
    const reused = await fetch(link ?? "", { redirect: "manual" });
    expect(reused.status).toBe(401);
    expect(await reused.text()).toContain("登录链接已使用过");
    const linkToken = new URL(link ?? "").searchParams.get("token") ?? "";
    expect(verifyToken(secret, linkToken, Date.now())).toEqual({
      ok: false,
      reason: "a sign-in link is not a token",
    });
    expect(result.stdout).toMatch(/opens once, valid until/);
  }, 30_000);

  it("uses http://localhost:$PORT for the link when PUBLIC_URL is not set, and AUTH_SECRET when it is", async () => {
    const dataDir = tempDir();
    const secret = "an-operator-secret-of-some-length";
    const result = await tokenCli(["ou_bob", "2"], { DATA_DIR: dataDir, PORT: "4321", AUTH_SECRET: secret });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("http://localhost:4321/auth/link?token=");
    expect(result.stdout).toContain("PUBLIC_URL is not set");
    const token = result.stdout.trimEnd().split("\n").at(-1) ?? "";
    const check = verifyToken(secret, token, Date.now());
    expect(check).toMatchObject({ ok: true, userId: "ou_bob" });
    if (check.ok) expect(check.expiresAt - Date.now()).toBeLessThanOrEqual(2 * 24 * 60 * 60 * 1000);
    // With AUTH_SECRET given, nothing is written into DATA_DIR.
    expect(fs.existsSync(path.join(dataDir, "auth-secret"))).toBe(false);
  }, 30_000);

  it("with PORT=0 and no PUBLIC_URL, names no dead :0 port but says where the real one is", async () => {
    const secret = "an-operator-secret-of-some-length";
    const result = await tokenCli(["ou_bob"], { DATA_DIR: tempDir(), PORT: "0", AUTH_SECRET: secret });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain("localhost:0");
    expect(result.stdout).toContain("http://localhost:<port>/auth/link?token=");
    expect(result.stdout).toContain("`listening` line");
  }, 30_000);

  it("refuses, saying where it looked, when it cannot find the server's secret; it creates none", async () => {
    const elsewhere = tempDir();
    const result = await tokenCli(["ou_alice"], {}, elsewhere);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("AUTH_SECRET is not set");
    expect(result.stderr).toContain(path.join(fs.realpathSync(elsewhere), "data", "auth-secret"));
    expect(result.stderr).toContain("DATA_DIR");
    expect(fs.existsSync(path.join(elsewhere, "data"))).toBe(false);

    const usage = await tokenCli([], { DATA_DIR: elsewhere });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("usage: npm run token -- <open_id> [days]");
  }, 30_000);

  it("signs with the AUTH_SECRET npm run setup wrote under DATA_DIR, as the bot that reads that file does", async () => {
    const dataDir = tempDir();
    const secret = "setup-written-secret-0123456789abcdefghij";
    fs.writeFileSync(
      path.join(dataDir, "feishu-app.env"),
      `# written by npm run setup\nFEISHU_APP_ID=cli_test\nFEISHU_APP_SECRET=s\nAUTH_SECRET=${secret}\n`,
      { mode: 0o600 },
    );
    const result = await tokenCli(["ou_alice"], { DATA_DIR: dataDir, PUBLIC_URL: "https://bot.example.com" });
    expect(result.code, result.stderr).toBe(0);
    const token = result.stdout.trimEnd().split("\n").at(-1) ?? "";
    expect(verifyToken(secret, token, Date.now())).toMatchObject({ ok: true, userId: "ou_alice" });
  }, 30_000);
});

describe("npm run token with DATABASE_URL (issue 27)", () => {
  const secret = "an-operator-secret-shared-by-every-instance";

  it("revokes in the bot's Postgres, where every instance's revocations see it, and mints the next generation", async () => {
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir, DATABASE_URL: pg().url, AUTH_SECRET: secret };
    const revocations = new StoreTokenRevocations(postgresSql(pg().pool({ types: STORE_PG_TYPES })));

    // A database the bot has not started on yet is prepared, not refused: it is the one the bot will use.
    const before = await tokenCli(["ou_alice"], env);
    expect(before.code, before.stderr).toBe(0);
    const oldToken = before.stdout.trimEnd().split("\n").at(-1) ?? "";
    expect(await checkToken(secret, oldToken, Date.now(), revocations)).toMatchObject({ ok: true });

    const revoked = await tokenCli(["--revoke", "ou_alice"], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain("revoked every token of ou_alice");
    expect(await revocations.generation("ou_alice")).toBe(1);
    expect(await checkToken(secret, oldToken, Date.now(), revocations)).toEqual({
      ok: false,
      reason: "token revoked",
    });

    const after = await tokenCli(["ou_alice"], env);
    expect(after.code, after.stderr).toBe(0);
    const newToken = after.stdout.trimEnd().split("\n").at(-1) ?? "";
    expect(await checkToken(secret, newToken, Date.now(), revocations)).toMatchObject({
      ok: true,
      userId: "ou_alice",
      generation: 1,
    });
    // Nothing went to a SQLite file beside it.
    expect(fs.existsSync(path.join(dataDir, "bot.sqlite"))).toBe(false);
  }, 60_000);

  it("exits 1 naming the unreachable Postgres, never its password, and never looks for bot.sqlite", async () => {
    const port = await freePort();
    const env = {
      DATA_DIR: tempDir(),
      DATABASE_URL: `postgres://bot:hunter2-very-secret@127.0.0.1:${port}/bot`,
      AUTH_SECRET: secret,
    };
    for (const args of [["ou_alice"], ["--revoke", "ou_alice"], ["--revoke-agent", "builder"]]) {
      const result = await tokenCli(args, env);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`Postgres at 127.0.0.1:${port}/bot is unreachable`);
      expect(result.stderr).toContain("DATABASE_URL");
      expect(result.stderr).not.toContain("hunter2");
      expect(result.stderr).not.toContain("Cannot find the bot's database");
    }
  }, 60_000);
});
