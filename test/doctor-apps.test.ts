import { spawn } from "node:child_process";
import { createDecipheriv, createHash } from "node:crypto";
import fs from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, type RunnableConfig } from "../src/config.ts";
import { readConfigFile } from "../src/config-file.ts";
import { doctorTargets } from "../src/feishu/doctor/apps.ts";
import type { DoctorTarget } from "../src/feishu/doctor/checks.ts";
import { startupChecks } from "../src/feishu/doctor/startup.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * `npm run doctor` and the start-up checks with a config file of several apps (issue 30): every app is checked
 * with its own credentials and transport, under a heading naming it, and one failing app fails the run.
 */

const root = path.resolve(import.meta.dirname, "..");
const A = "cli_a000000000000001";
const B = "cli_b000000000000002";
const AUTH_SECRET = "doctor-auth-secret-0123456789abcdef";
let emulator: Emulator | undefined;
let server: Server | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A stand-in for the bot under PUBLIC_URL: answers /healthz, and Feishu's URL check only at `path`. */
async function answerUrlCheckAt(urlPath: string, key: string): Promise<string> {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += String(chunk);
    });
    req.on("end", () => {
      if (req.url === "/healthz") {
        res.writeHead(200).end("ok");
        return;
      }
      if (req.url !== urlPath) {
        res.writeHead(404).end("{}");
        return;
      }
      const raw = Buffer.from((JSON.parse(body) as { encrypt: string }).encrypt, "base64");
      const decipher = createDecipheriv(
        "aes-256-cbc",
        createHash("sha256").update(key).digest(),
        raw.subarray(0, 16),
      );
      const plain = Buffer.concat([decipher.update(raw.subarray(16)), decipher.final()]).toString("utf8");
      const { challenge } = JSON.parse(plain) as { challenge: string };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ challenge }));
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function configFile(apps: unknown[]): string {
  const file = path.join(tempDataDir(), "feishu-progress-bot.json");
  fs.writeFileSync(file, JSON.stringify({ apps }));
  return file;
}

function doctor(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/doctor.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", DATA_DIR: tempDataDir(), AUTH_SECRET, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += String(chunk);
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    out += String(chunk);
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, out })));
}

/** The lines under `App <id>:`, up to the next heading or the end of the apps. */
function section(out: string, appId: string): string {
  const lines = out.split("\n");
  const start = lines.indexOf(`App ${appId}:`);
  if (start < 0) return "";
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => !line.startsWith("  "));
  return rest.slice(0, end < 0 ? undefined : end).join("\n");
}

describe("npm run doctor with two apps", () => {
  it("checks both apps, each under its id, and exits 0 when both pass", async () => {
    emulator = await startEmulator({ appId: A, otherApps: [{ appId: B }] });
    const file = configFile([
      { appId: A, appSecret: emulator.appSecret, domain: emulator.url },
      { appId: B, appSecret: emulator.app(B).appSecret, domain: emulator.url },
    ]);
    const { code, out } = await doctor({ CONFIG_FILE: file });
    for (const appId of [A, B]) {
      expect(section(out, appId)).toMatch(
        new RegExp(`^ {2}ok {4}credentials: ${appId} gets a tenant token`, "m"),
      );
      expect(section(out, appId)).toMatch(/^ {2}ok {4}bot: the bot capability is on/m);
      expect(section(out, appId)).toMatch(/^ {2}ok {4}long connection: /m);
    }
    expect(out).not.toContain("FAIL");
    expect(out).not.toContain("not checked:");
    expect(out.match(/Not checked \(no API tells\):/g)).toHaveLength(1);
    expect(out).toContain("All 2 apps passed");
    expect(code).toBe(0);
  }, 30_000);

  it("fails a second app with a wrong secret, naming it, while the first passes", async () => {
    emulator = await startEmulator({ appId: A, otherApps: [{ appId: B }] });
    const file = configFile([
      { appId: A, appSecret: emulator.appSecret, domain: emulator.url },
      { appId: B, appSecret: "not-the-secret-of-b", domain: emulator.url },
    ]);
    const { code, out } = await doctor({ CONFIG_FILE: file });
    expect(section(out, A)).toMatch(/credentials: /);
    expect(section(out, A)).not.toContain("FAIL");
    expect(section(out, B)).toMatch(
      new RegExp(
        `^ {2}FAIL {2}credentials: .* refused ${B}'s credentials \\(code 10014.*: check its appSecret and domain in the config file's apps`,
        "m",
      ),
    );
    expect(out).toContain(`Failed: ${B} (of 2 apps)`);
    expect(code).toBe(1);
  }, 30_000);
});

describe("npm run doctor with a webhook app among several", () => {
  it("checks the webhook app's URL check at PUBLIC_URL/feishu/<app id>/events", async () => {
    emulator = await startEmulator({ appId: A, otherApps: [{ appId: B, encryptKey: "key-of-b" }] });
    const publicUrl = await answerUrlCheckAt(`/feishu/${B}/events`, "key-of-b");
    const file = configFile([
      { appId: A, appSecret: emulator.appSecret, domain: emulator.url },
      {
        appId: B,
        appSecret: emulator.app(B).appSecret,
        domain: emulator.url,
        transport: "webhook",
        encryptKey: "key-of-b",
      },
    ]);
    const { code, out } = await doctor({ CONFIG_FILE: file, PUBLIC_URL: publicUrl });
    expect(section(out, A)).toMatch(/^ {2}ok {4}long connection: /m);
    expect(section(out, B)).toContain(
      `ok    webhook: ${publicUrl}/feishu/${B}/events answers the URL check as Feishu sends it`,
    );
    expect(section(out, B)).toMatch(/^ {2}ok {4}PUBLIC_URL: /m);
    expect(out).toContain("All 2 apps passed");
    expect(code).toBe(0);
  }, 30_000);
});

describe("several apps' targets", () => {
  const load = (apps: unknown[], env: Record<string, string> = {}): RunnableConfig => {
    const config = loadConfig(
      { AUTH_SECRET, DATA_DIR: tempDataDir(), ...env },
      readConfigFile({ CONFIG_FILE: configFile(apps) }),
    );
    if (config.mode !== "feishu") throw new Error("expected feishu mode");
    return config;
  };

  it("checks each webhook app at its own path, a single app at /feishu/events", () => {
    const config = load(
      [
        { appId: A, appSecret: "secret-a" },
        { appId: B, appSecret: "secret-b", transport: "webhook", encryptKey: "key-b" },
      ],
      { PUBLIC_URL: "https://bot.example" },
    );
    expect(doctorTargets(config)).toMatchObject([
      { appId: A, appSecret: "secret-a", transport: "ws", webhookPath: `/feishu/${A}/events` },
      {
        appId: B,
        appSecret: "secret-b",
        transport: "webhook",
        encryptKey: "key-b",
        publicUrl: "https://bot.example",
        webhookPath: `/feishu/${B}/events`,
      },
    ]);
    const single = load([{ appId: A, appSecret: "secret-a", transport: "webhook", encryptKey: "k" }]);
    expect(doctorTargets(single)).toEqual([
      expect.objectContaining({ appId: A, webhookPath: "/feishu/events" }),
    ]);
  });

  it("start-up checks run for every app and name the app in each warning", async () => {
    const config = load([
      { appId: A, appSecret: "secret-a", domain: "feishu" },
      { appId: B, appSecret: "secret-b", domain: "lark" },
    ]);
    let log = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        log += String(chunk);
        done();
      },
    });
    const seen: DoctorTarget[] = [];
    await startupChecks(config, createLogger({ level: "warn", destination: sink }), async (target) => {
      seen.push(target);
      return target.appId === B
        ? [{ name: "credentials", status: "fail", line: `refused ${target.appId}` }]
        : [{ name: "credentials", status: "ok", line: "fine" }];
    });
    expect(seen.map((target) => [target.appId, target.domain])).toEqual([
      [A, "feishu"],
      [B, "lark"],
    ]);
    const warnings = log.split("\n").filter((line) => line.includes('"check"'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] ?? "{}")).toMatchObject({
      app: B,
      check: "credentials",
      msg: `refused ${B}`,
    });
  });
});
