import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { parseEnvFile } from "../src/feishu/setup/credentials-file.ts";
import { type Emulator, type EmulatorOptions, startEmulator } from "../src/local/emulator/index.ts";
import { requestIdsOn } from "./helpers/feishu.ts";
import { startMain } from "./helpers/main-process.ts";
import { until } from "./helpers/wait.ts";
import { tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * `npm run setup` end to end against the emulator's registration endpoints (issue 28): the scan, each way
 * it fails, the Lark switch, twice, interrupted — and then the bot started from what setup wrote, with no
 * FEISHU_* or AUTH_SECRET in its environment, answering a private chat to the end.
 */

const root = path.resolve(import.meta.dirname, "..");
const ALICE = "ou_alice000000000000000000000000000";
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function emulatorWith(options: EmulatorOptions): Promise<Emulator> {
  const emulator = await startEmulator(options);
  cleanup.push(() => emulator.close());
  return emulator;
}

interface SetupRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** The QR's URL, once setup printed it. */
  qrUrl(): Promise<string>;
}

function setup(emulator: Emulator, dataDir: string, args: string[] = []): SetupRun {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli/setup.ts", "--domain", emulator.url, ...args],
    {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  cleanup.push(() => void (child.exitCode === null && child.kill("SIGKILL")));
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += String(chunk);
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += String(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    qrUrl: () => until(() => /or open (\S+)/.exec(out)?.[1], "the QR's URL", 20_000, 20),
  };
}

const credentials = (dataDir: string) => path.join(dataDir, "feishu-app.env");

function leftovers(dataDir: string): string[] {
  return fs.existsSync(dataDir) ? fs.readdirSync(dataDir) : [];
}

describe("npm run setup against the emulator", () => {
  it("creates the app in one scan, validates and writes it 0600, and the bot then runs from that file alone", async () => {
    const emulator = await emulatorWith({ registration: { intervalS: 0.1 } });
    const dataDir = tempDataDir();
    const run = setup(emulator, dataDir);
    const url = await run.qrUrl();
    expect(run.stdout()).toContain("▄"); // the QR drawn in the terminal
    await until(() => run.stdout().includes("authorization_pending"), "the waiting line", 10_000, 20);
    expect(fs.existsSync(path.join(dataDir, "setup-qr.png"))).toBe(true);
    expect(fs.existsSync(credentials(dataDir))).toBe(false);
    emulator.registrations.confirm(url);
    expect(await run.exited).toBe(0);

    // What the QR carried: the manifest's scopes, events and callback for the confirm page.
    const scanned = emulator.registrations.scannedQuery(url);
    expect(scanned?.get("createOnly")).toBe("true");
    expect(scanned?.get("addons")).toBeTruthy();
    const file = credentials(dataDir);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const saved = parseEnvFile(fs.readFileSync(file, "utf8"));
    expect(saved).toMatchObject({
      FEISHU_APP_ID: emulator.appId,
      FEISHU_APP_SECRET: emulator.appSecret,
      FEISHU_DOMAIN: emulator.url,
    });
    expect(saved.AUTH_SECRET?.length).toBeGreaterThanOrEqual(32);
    expect(emulator.callsTo("POST", "/open-apis/auth/v3/tenant_access_token/internal")).toHaveLength(1);
    expect(run.stdout()).toContain(`${emulator.url}/app/${emulator.appId}/event`);
    expect(run.stdout()).toContain("版本管理与发布");
    expect(leftovers(dataDir).sort()).toEqual(["feishu-app.env"]);

    // The bot, from that file: only DATA_DIR (and PORT=0) in its environment.
    emulator.subscribe({ mode: "long_connection" });
    const bot = await startMain({ env: { DATA_DIR: dataDir, LOG_LEVEL: "info" } });
    cleanup.push(() => bot.kill());
    expect(bot.output()).toContain('"mode":"feishu"');
    await until(() => emulator.longConnection.online === 1, "the bot's long connection", 15_000, 20);
    const payload = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    expect((await emulator.longConnection.deliver(payload)).status).toBe(200);
    const cardOf = () => {
      const message = emulator.messages
        .listMessages()
        .find((m) => m.msgType === "interactive" && m.senderType === "app");
      return message ? { id: message.messageId, card: JSON.parse(message.content) as Card } : undefined;
    };
    const asked = await until(
      () => {
        const current = cardOf();
        const requestId = current ? requestIdsOn(current.card)[0] : undefined;
        return current && requestId ? { ...current, requestId } : undefined;
      },
      "the demo's question on the card",
      20_000,
      50,
    );
    const outcome = await emulator.click({
      messageId: asked.id,
      operatorOpenId: ALICE,
      name: "ask0_submit",
      value: {
        kind: "feishu_ask",
        act: "submit",
        sessionId: `feishu-${emulator.appId}-private-${ALICE}`,
        requestId: asked.requestId,
        sender: ALICE,
      },
      formValue: { ask0_q0: "0", ask0_q1: ["1"] },
    });
    expect(outcome.status).toBe(200);
    await until(() => cardOf()?.card.header?.template === "green", "the completed card", 30_000, 50);
  }, 90_000);

  it("writes into an existing --env-file in place: its other settings, comments and AUTH_SECRET are kept", async () => {
    const emulator = await emulatorWith({ registration: { intervalS: 0.1 } });
    const dataDir = tempDataDir();
    const envFile = path.join(dataDir, "team.env");
    fs.mkdirSync(dataDir, { recursive: true });
    const before =
      "# our settings\nAGENT=acp\nAUTH_SECRET=kept-secret-0123456789abcdefghijklmnop\nLOG_LEVEL=debug\n";
    fs.writeFileSync(envFile, before);
    const run = setup(emulator, dataDir, ["--env-file", envFile]);
    emulator.registrations.confirm(await run.qrUrl());
    expect(await run.exited, run.stderr()).toBe(0);
    const text = fs.readFileSync(envFile, "utf8");
    expect(text.startsWith("# our settings\nAGENT=acp\n")).toBe(true);
    expect(parseEnvFile(text)).toEqual({
      AGENT: "acp",
      AUTH_SECRET: "kept-secret-0123456789abcdefghijklmnop",
      LOG_LEVEL: "debug",
      FEISHU_APP_ID: emulator.appId,
      FEISHU_APP_SECRET: emulator.appSecret,
      FEISHU_DOMAIN: emulator.url,
    });
    expect(fs.statSync(envFile).mode & 0o777).toBe(0o600);
    expect(run.stdout()).toContain("the AUTH_SECRET it had");
  }, 30_000);

  it("says access_denied in one line and writes nothing when the scan is declined", async () => {
    const emulator = await emulatorWith({ registration: { intervalS: 0.1 } });
    const dataDir = tempDataDir();
    const run = setup(emulator, dataDir);
    emulator.registrations.decline(await run.qrUrl());
    expect(await run.exited).toBe(1);
    expect(run.stderr().trim().split("\n")).toEqual([
      expect.stringContaining("(access_denied): nothing written"),
    ]);
    expect(leftovers(dataDir)).toEqual([]);
  }, 30_000);

  it("says expired_token in one line and writes nothing when nobody confirms in time", async () => {
    const emulator = await emulatorWith({ registration: { intervalS: 0.1, expiresInS: 1 } });
    const dataDir = tempDataDir();
    const run = setup(emulator, dataDir);
    expect(await run.exited).toBe(1);
    expect(run.stderr().trim().split("\n")).toEqual([
      expect.stringContaining("(expired_token): nothing written"),
    ]);
    expect(leftovers(dataDir)).toEqual([]);
  }, 30_000);

  it("slows down when told (slow_down), and an interrupt (Ctrl-C) leaves nothing behind", async () => {
    const emulator = await emulatorWith({ registration: { intervalS: 0.1, minPollGapMs: 2_000 } });
    const dataDir = tempDataDir();
    const run = setup(emulator, dataDir);
    await until(() => run.stdout().includes("(slow_down): next check in"), "the slow_down line", 15_000, 20);
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(130);
    expect(run.stderr().trim()).toBe("Setup interrupted: nothing written.");
    expect(leftovers(dataDir)).toEqual([]);
  }, 30_000);

  it("follows a Lark tenant to Lark's host, and saves an app whose brand was not the one asked for", async () => {
    const lark = await emulatorWith({ tenantBrand: "lark", registration: { intervalS: 0.1 } });
    const larkDir = tempDataDir();
    const toLark = setup(lark, larkDir);
    lark.registrations.confirm(await toLark.qrUrl());
    expect(await toLark.exited).toBe(0);
    expect(toLark.stdout()).toContain("continuing on Lark's accounts host");
    expect(toLark.stdout()).toContain("The app is on Lark, not Feishu");
    expect(toLark.stdout()).toContain("Version Management & Release");
    expect(lark.calls.some((call) => call.path.startsWith("/lark/oauth/v1/app/registration"))).toBe(true);

    const feishu = await emulatorWith({ registration: { intervalS: 0.1 } });
    const feishuDir = tempDataDir();
    const wrong = setup(feishu, feishuDir, ["--lark"]);
    feishu.registrations.confirm(await wrong.qrUrl());
    expect(await wrong.exited).toBe(0);
    expect(wrong.stdout()).toContain("The app is on Feishu, not Lark");
    expect(wrong.stdout()).toContain("事件与回调");
  }, 60_000);

  it("refuses to run twice over the same app, and writes nothing when the token call refuses the credentials", async () => {
    const emulator = await emulatorWith({ registration: { intervalS: 0.1 } });
    const dataDir = tempDataDir();
    const first = setup(emulator, dataDir);
    emulator.registrations.confirm(await first.qrUrl());
    expect(await first.exited).toBe(0);
    const before = fs.readFileSync(credentials(dataDir), "utf8");

    const again = setup(emulator, dataDir);
    expect(await again.exited).toBe(1);
    expect(again.stderr()).toContain(`already holds app ${emulator.appId}: nothing changed`);
    expect(emulator.registrations.list()).toHaveLength(1); // no second app was begun

    emulator.injectFault({
      match: { path: "/open-apis/auth/v3/tenant_access_token/internal" },
      times: 1,
      response: { httpStatus: 200, code: 10014, msg: "app secret invalid" },
    });
    const forced = setup(emulator, dataDir, ["--force"]);
    emulator.registrations.confirm(await forced.qrUrl());
    expect(await forced.exited).toBe(1);
    expect(forced.stderr().trim().split("\n")).toEqual([
      expect.stringContaining("refused the new credentials"),
    ]);
    expect(fs.readFileSync(credentials(dataDir), "utf8")).toBe(before);
    expect(leftovers(dataDir).sort()).toEqual(["feishu-app.env"]);
  }, 60_000);
});
