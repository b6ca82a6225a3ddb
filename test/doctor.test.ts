import { spawn } from "node:child_process";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { runChecks } from "../src/feishu/doctor/checks.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * `npm run doctor` against the emulator (issue 28): what a tenant may be missing, one line each and what it
 * cannot see; and a call refused for a missing scope names the scope and its manifest line, once.
 */

const root = path.resolve(import.meta.dirname, "..");
const ALL_BUT_CONTACT = ["im:message:send_as_bot", "im:message:readonly"];
let emulator: Emulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

function doctor(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/doctor.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", DATA_DIR: tempDataDir(), ...env },
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

describe("npm run doctor", () => {
  it("passes what is there, fails a missing scope naming its manifest line, and says what it cannot check", async () => {
    emulator = await startEmulator({ grantedScopes: ALL_BUT_CONTACT });
    const { code, out } = await doctor({
      FEISHU_APP_ID: emulator.appId,
      FEISHU_APP_SECRET: emulator.appSecret,
      FEISHU_DOMAIN: emulator.url,
      AUTH_SECRET: "doctor-auth-secret-0123456789abcdef",
    });
    expect(code).toBe(1);
    expect(out).toMatch(/^ok {4}credentials: /m);
    expect(out).toMatch(/^ok {4}bot: the bot capability is on/m);
    expect(out).toMatch(/^ok {4}scope im:message:send_as_bot: scope im:message:send_as_bot granted/m);
    expect(out).toMatch(
      /^FAIL {2}scope contact:user\.base:readonly: missing scope .*feishu-app\.json: Reads a person's name/m,
    );
    expect(out).toMatch(/^ok {4}long connection: /m);
    expect(out).toMatch(/^ok {4}clock: /m);
    expect(out).toMatch(/^warn {2}PUBLIC_URL: PUBLIC_URL is not set/m);
    expect(out).toContain("Not checked (no API tells):");
  }, 30_000);

  it("fails the credentials in one line when the secret is wrong, and exits 0 when all is there", async () => {
    emulator = await startEmulator();
    const target = { appId: emulator.appId, domain: emulator.url, transport: "ws" as const };
    const wrong = await runChecks({ ...target, appSecret: "not-the-secret" });
    expect(wrong.find((check) => check.name === "credentials")).toMatchObject({ status: "fail" });
    expect(wrong.find((check) => check.name === "credentials")?.line).toContain("code 10014");
    const { code, out } = await doctor({
      FEISHU_APP_ID: emulator.appId,
      FEISHU_APP_SECRET: emulator.appSecret,
      FEISHU_DOMAIN: emulator.url,
      AUTH_SECRET: "doctor-auth-secret-0123456789abcdef",
    });
    expect(out).not.toContain("FAIL");
    expect(code).toBe(0);
  }, 30_000);

  it("in local mode says there is no app to check", async () => {
    const { code, out } = await doctor({});
    expect(code).toBe(1);
    expect(out).toContain("run npm run setup first");
  }, 30_000);
});

describe("a call refused for a missing scope", () => {
  it("is one warning naming the scope and its feishu-app.json line, the first time only", async () => {
    emulator = await startEmulator({ grantedScopes: ALL_BUT_CONTACT });
    let log = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        log += String(chunk);
        done();
      },
    });
    const messenger = createLarkMessenger({
      appId: emulator.appId,
      appSecret: emulator.appSecret,
      domain: emulator.url,
      logger: createLogger({ level: "warn", destination: sink }),
    });
    for (let i = 0; i < 3; i += 1) {
      const error = await messenger.userName("ou_someone").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FeishuApiError);
      expect((error as FeishuApiError).feishuCode).toBe(99991672);
    }
    const lines = log.split("\n").filter((line) => line.includes("lacks the scope"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("the app lacks the scope contact:user.base:readonly");
    expect(lines[0]).toContain('feishu-app.json: \\"contact:user.base:readonly\\"');
    expect(lines[0]).not.toContain("stack");
  });
});
