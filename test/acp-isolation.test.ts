import { type ChildProcess, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.ts";
import { bwrapArgs, resolveIsolation } from "../src/harness/agents/isolation.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { TSX_LOADER } from "./helpers/acp.ts";
import { startMain } from "./helpers/main-process.ts";
import { until as waitUntil } from "./helpers/wait.ts";

/**
 * What an ACP agent behind the bot can reach (issue 24 item 3): `npm start` with AGENT=acp and a hostile
 * child agent (test/fixtures/acp-hostile-agent.ts) that hunts for the bot's secrets in every process's
 * environment and opens bot.sqlite itself. In the bubblewrap sandbox it finds neither. The sandbox case runs
 * where `bwrap` is installed (Debian: apt install bubblewrap); the start-up notice is checked everywhere.
 */

const ALICE = "ou_alice000000000000000000000000000";
const ENCRYPT_KEY = "test-encrypt-key-123";
const HOSTILE = fileURLToPath(new URL("./fixtures/acp-hostile-agent.ts", import.meta.url));
const BWRAP = resolveIsolation({ sandbox: "auto", hidden: [], searchPath: process.env.PATH ?? "" });
const running: { child?: ChildProcess; emulator: Emulator }[] = [];

afterEach(async () => {
  for (const { child, emulator } of running.splice(0)) {
    child?.kill("SIGKILL");
    await emulator.close();
  }
});

/** A bot in feishu mode (webhooks to the emulator) whose agent is the hostile one; `ask` returns the answer. */
async function hostileBot(
  sandbox: "auto" | "off",
  asUser?: { user: string; workspacesDir: string; base: string },
) {
  const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
  const dataDir = asUser
    ? path.join(asUser.base, "data")
    : fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-iso-"));
  const entry: { child?: ChildProcess; emulator: Emulator } = { emulator };
  running.push(entry);
  const bot = await startMain({
    env: {
      LOG_LEVEL: "info",
      DATA_DIR: dataDir,
      FEISHU_APP_ID: emulator.appId,
      FEISHU_APP_SECRET: emulator.appSecret,
      FEISHU_DOMAIN: emulator.url,
      FEISHU_TRANSPORT: "webhook",
      FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
      AUTH_SECRET: "acp-isolation-test-secret-0123456789",
      AGENT: "acp",
      AGENT_SANDBOX: sandbox,
      ACP_COMMAND: process.execPath,
      ACP_ARGS: JSON.stringify(["--import", TSX_LOADER, HOSTILE]),
      ...(asUser ? { AGENT_USER: asUser.user, WORKSPACES_DIR: asUser.workspacesDir } : {}),
    },
  });
  entry.child = bot.child;
  const hook = `http://127.0.0.1:${bot.port}/feishu/events`;
  const ask = async (text: string): Promise<string> => {
    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text });
    expect((await emulator.deliverWebhook(hook, message)).status).toBe(200);
    const parent = message.event.message.message_id;
    return waitUntil(
      () => {
        const card = emulator.messages
          .listMessages()
          .find((m) => m.parentId === parent && m.msgType === "interactive");
        return card?.content.includes('"template":"green"') && card.content;
      },
      "the finished card",
      30_000,
      20,
    );
  };
  return { bot, ask, dataDir, secret: emulator.appSecret };
}

describe("what an ACP agent can reach", () => {
  it.skipIf(BWRAP.kind !== "bwrap")(
    "in the bubblewrap sandbox, finds no process with the bot's secret and cannot open bot.sqlite",
    async () => {
      const { bot, ask, dataDir, secret } = await hostileBot("auto");
      expect(bot.output()).toContain("child processes run in a bubblewrap sandbox");
      const environ = await ask("/environ");
      expect(environ).toContain("environ has no secret");
      expect(environ).not.toContain(secret);
      const peek = await ask(`/peek ${path.join(dataDir, "bot.sqlite")}`);
      expect(peek).toContain("ENOENT");
      // Its own workspace is still there for it, and writable through the bot's door.
      expect(await ask("/write notes.txt hello")).toContain("written");
      expect(await ask("/peek notes.txt")).toContain("peeked 5 bytes");
    },
  );

  it("without a sandbox, says at start-up what the agent can reach, and it is so", async () => {
    const { bot, ask, dataDir, secret } = await hostileBot("off");
    await waitUntil(
      () => bot.output().includes("child processes run without a sandbox"),
      "the notice",
      10_000,
      20,
    );
    expect(bot.output()).toContain(
      "can read DATA_DIR, every chat's workspace and this process's initial environment",
    );
    // The attack of issue 24 item 3, as it still stands here: the notice is not a figure of speech.
    expect(await ask("/environ")).toContain(`environ leaked FEISHU_APP_SECRET=${secret}`);
    expect(await ask(`/peek ${path.join(dataDir, "bot.sqlite")}`)).toMatch(/peeked \d+ bytes/);
  });
});

/**
 * AGENT_USER=nobody needs root (setpriv switches users) and a checkout `nobody` can read (the agent is this
 * repository's fixture run by node): a CI checkout under a 0700 folder would not be, so it is asked first.
 */
const NOBODY_CAN_RUN_FIXTURE =
  process.getuid?.() === 0 &&
  spawnSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "test", "-r", HOSTILE])
    .status === 0 &&
  spawnSync("setpriv", [
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--",
    "test",
    "-r",
    fileURLToPath(TSX_LOADER),
  ]).status === 0;

describe("AGENT_USER: the agent as another user, without a sandbox", () => {
  it.skipIf(!NOBODY_CAN_RUN_FIXTURE)(
    "finds no secret in any environment it can read, cannot open bot.sqlite, and still writes its workspace",
    async () => {
      const base = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-user-"));
      fs.chmodSync(base, 0o755); // nobody must reach the workspaces beside DATA_DIR
      const workspacesDir = path.join(base, "workspaces");
      const { bot, ask, dataDir, secret } = await hostileBot("off", { user: "nobody", workspacesDir, base });
      await waitUntil(() => bot.output().includes("as user nobody (uid 65534)"), "the notice", 10_000, 20);
      expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
      const environ = await ask("/environ");
      expect(environ).toContain("environ has no secret");
      expect(environ).not.toContain(secret);
      expect(await ask(`/peek ${path.join(dataDir, "bot.sqlite")}`)).toContain("EACCES");
      // The bot (root) writes for it through the door, and what it writes is the agent's own.
      expect(await ask("/write notes.txt hello")).toContain("written");
      expect(await ask("/peek notes.txt")).toContain("peeked 5 bytes");
      const written = fs
        .readdirSync(workspacesDir, { recursive: true, withFileTypes: true })
        .find((entry) => entry.name === "notes.txt");
      expect(written).toBeDefined();
      expect(fs.statSync(path.join(written!.parentPath, "notes.txt")).uid).toBe(65534);
    },
  );

  it("refuses a start it cannot keep: unknown user, root, not root, workspaces inside DATA_DIR without bwrap", () => {
    const passwd = () => "root:x:0:0::/root:/bin/sh\nagent:x:1001:1001::/home/agent:/bin/sh\n";
    const base = {
      sandbox: "off" as const,
      hidden: [],
      searchPath: "",
      which: () => "/usr/bin/setpriv",
      passwd,
    };
    const data = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-agent-user-"));
    const start =
      (agentUser: string, more: { isRoot?: boolean; workspacesDir?: string } = {}) =>
      () =>
        resolveIsolation({
          ...base,
          agentUser,
          dataDir: data,
          workspacesDir: more.workspacesDir ?? path.join(os.tmpdir(), "fpb-elsewhere"),
          isRoot: () => more.isRoot ?? true,
        });
    expect(start("ghost")).toThrow(ConfigError);
    expect(start("ghost")).toThrow(/no such user/);
    expect(start("root")).toThrow(/is root/);
    expect(start("0:0")).toThrow(/is root/);
    expect(start("agent", { isRoot: false })).toThrow(/must run as root/);
    expect(start("agent", { workspacesDir: path.join(data, "workspaces") })).toThrow(
      /WORKSPACES_DIR outside DATA_DIR/,
    );
    const isolation = start("1001")();
    expect(isolation.user).toEqual({ name: "1001", uid: 1001, gid: 1001 });
    expect(isolation.wrap({ command: "agent-bin", args: ["--acp"], cwd: "/" })).toEqual({
      command: "/usr/bin/setpriv",
      args: ["--reuid=1001", "--regid=1001", "--clear-groups", "--", "agent-bin", "--acp"],
    });
    expect(start("1001:50")().user).toEqual({ name: "1001:50", uid: 1001, gid: 50 });
    expect(fs.statSync(data).mode & 0o777).toBe(0o700);
  });
});

describe("resolveIsolation", () => {
  it("falls back to no sandbox with a notice when bwrap is absent, and refuses AGENT_SANDBOX=bwrap then", () => {
    const absent = resolveIsolation({
      sandbox: "auto",
      hidden: ["/data"],
      searchPath: "",
      which: () => undefined,
    });
    expect(absent.kind).toBe("none");
    expect(absent.notice).toContain("bwrap not found on PATH");
    expect(() =>
      resolveIsolation({ sandbox: "bwrap", hidden: [], searchPath: "", which: () => undefined }),
    ).toThrow(ConfigError);
  });

  it("hides DATA_DIR behind a tmpfs and binds only the chat's workspace back, in that order", () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-bwrap-args-"));
    const workspace = path.join(dataDir, "workspaces", "feishu-private", "ou_x");
    const args = bwrapArgs([dataDir, path.join(dataDir, "missing.json")], {
      command: "agent",
      args: ["--acp"],
      cwd: workspace,
      writable: [workspace],
    });
    expect(args.slice(0, 4)).toEqual([
      "--die-with-parent",
      "--new-session",
      "--unshare-pid",
      "--unshare-ipc",
    ]);
    const tmpfs = args.indexOf("--tmpfs");
    expect(args[tmpfs + 1]).toBe(dataDir);
    expect(args.indexOf("--bind")).toBeGreaterThan(tmpfs);
    expect(args.slice(-4)).toEqual([workspace, "--", "agent", "--acp"]);
    expect(args).not.toContain(path.join(dataDir, "missing.json"));
  });
});
