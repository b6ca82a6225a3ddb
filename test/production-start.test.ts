import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type MainProcess, startMain } from "./helpers/main-process.ts";
import { until } from "./helpers/wait.ts";
import { tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * The production start (issue 28): `npm run build` compiles the service and the pages' scripts to plain
 * JavaScript, `node dist/main.js` runs with no tsx, and SIGTERM — what systemd, pm2 or a container sends —
 * reaches the bot itself: it stops taking events, parks the running task (resumed at the next start), lands
 * the card's last PATCH, and exits 0 well inside the runtime's 10 s.
 */

const root = path.resolve(import.meta.dirname, "..");
const out = path.join(root, "test-artifacts", `dist-${process.pid}`);
const ALICE = "ou_local_alice";
const CHAT = `oc_p2p_${ALICE}`;

beforeAll(() => {
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts", "--out", out], {
    cwd: root,
    stdio: "pipe",
  });
}, 120_000);
afterAll(() => {
  fs.rmSync(out, { recursive: true, force: true });
});

const messages = z.object({
  messages: z.array(
    z.object({ messageId: z.string(), sender: z.object({ type: z.string() }), card: z.unknown().optional() }),
  ),
});

async function botCard(bot: MainProcess): Promise<{ messageId: string; card?: unknown } | undefined> {
  const response = await fetch(`http://127.0.0.1:${bot.port}/console/api/messages?chatId=${CHAT}`);
  const list = messages.parse(await response.json()).messages;
  return list.find((m) => m.sender.type === "app" && m.card !== undefined);
}

describe("node dist/main.js", () => {
  it("has no TypeScript left to run: entry, pages' scripts and the manifest's reader are JavaScript", () => {
    expect(fs.existsSync(path.join(out, "main.js"))).toBe(true);
    for (const file of [
      "web/public/session.js",
      "local/console/public/console.js",
      "local/console/public/agent-panel.js",
    ])
      expect(fs.readFileSync(path.join(out, file), "utf8")).not.toMatch(/^import /m);
    const main = fs.readFileSync(path.join(out, "main.js"), "utf8");
    expect(main).not.toMatch(/from "[^"]+\.ts"/);
  });

  it("serves the prebuilt page scripts, and on SIGTERM mid-task lands the card's last state and exits 0", async () => {
    const dataDir = tempDataDir();
    const bot = await startMain({
      compiled: path.join(out, "main.js"),
      // A long PATCH interval: the newest steps are still held back when the signal comes.
      env: { DATA_DIR: dataDir, LOG_LEVEL: "info", DEMO_STEP_MS: "150", CARD_PATCH_INTERVAL_MS: "4000" },
    });
    try {
      const script = await fetch(`http://127.0.0.1:${bot.port}/console/assets/console.js`);
      expect(script.status).toBe(200);
      expect((await script.text()).length).toBeGreaterThan(10_000);

      const sent = await fetch(`http://127.0.0.1:${bot.port}/console/api/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chatId: CHAT, userId: ALICE, text: "帮我部署" }),
      });
      expect(sent.status).toBeLessThan(300);
      const card = await until(() => botCard(bot), "the progress card", 20_000, 50);
      // A step or two past the card's first state: the last ones are waiting for the throttle.
      await new Promise((resolve) => setTimeout(resolve, 700));
      const at = Date.now();
      expect(await bot.stop(9_000)).toBe(0);
      expect(Date.now() - at).toBeLessThan(8_500);
      expect(bot.output()).not.toMatch(/"level":50/);

      // What the bot last knew of the run, and what the (persisted) emulator shows on its card.
      const botDb = new Database(path.join(dataDir, "bot.sqlite"), { readonly: true });
      const run = z
        .object({ status: z.string(), steps_json: z.string() })
        .parse(botDb.prepare("SELECT status, steps_json FROM runs ORDER BY started_at DESC LIMIT 1").get());
      botDb.close();
      const steps = z
        .array(z.object({ title: z.string(), status: z.string() }))
        .parse(JSON.parse(run.steps_json));
      expect(run.status).toBe("running"); // parked, not ended: the next start resumes it
      expect(steps.length).toBeGreaterThan(1);
      const emulatorDb = new Database(path.join(dataDir, "emulator.sqlite"), { readonly: true });
      const last = z
        .object({ content: z.string(), revision: z.number() })
        .parse(
          emulatorDb
            .prepare(
              "SELECT content, revision FROM card_revisions WHERE message_id = ? ORDER BY revision DESC LIMIT 1",
            )
            .get(card.messageId),
        );
      emulatorDb.close();
      for (const step of steps) expect(last.content).toContain(step.title);
    } finally {
      await bot.kill();
    }
  }, 60_000);
});
