import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator } from "../src/local/emulator/index.ts";
import { FAST_LONG_CONNECTION, type FeishuRig, startFeishuRig, WEBHOOK_KEY } from "./helpers/feishu.ts";

/**
 * The bot's identity kept (issue 27): a start listens without asking the platform who the bot is, so a
 * replacement that waits for its share of the app's budget (or a platform that does not answer bot/v3/info)
 * still knows when a group message @-mentions it. A first start, with nothing kept, still needs the answer.
 */

const ALICE = "ou_alice000000000000000000000000000";
const rigs: FeishuRig[] = [];
const emulators: Awaited<ReturnType<typeof startEmulator>>[] = [];

afterEach(async () => {
  for (const rig of rigs.splice(0).reverse()) await rig.stop();
  for (const emulator of emulators.splice(0)) await emulator.close();
});

async function emulator() {
  const started = await startEmulator({ encryptKey: WEBHOOK_KEY, longConnection: FAST_LONG_CONNECTION });
  emulators.push(started);
  return started;
}

const botInfoCalls = (emu: Awaited<ReturnType<typeof emulator>>) =>
  emu.calls.filter((call) => call.path.startsWith("/open-apis/bot/v3/info")).length;

describe("the bot's identity, kept", () => {
  it("starts from the kept identity when the platform does not say, and takes an @-mention in a group", async () => {
    const emu = await emulator();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-identity-"));
    const first = await startFeishuRig({ emulator: emu, dataDir, transport: "webhook" });
    expect(botInfoCalls(emu)).toBe(1);
    await first.stop();

    // The platform refuses bot/v3/info from now on: the next start begins anyway, from what was kept.
    emu.injectFault({
      match: { path: "/open-apis/bot/v3/info" },
      times: 1_000,
      response: { httpStatus: 500, code: 1, msg: "unavailable" },
    });
    const second = await startFeishuRig({ emulator: emu, dataDir, transport: "webhook" });
    rigs.push(second);
    const messageId = await second.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "帮我部署",
      mentionBot: true,
    });
    await second.progressCard(messageId);
    // It asked all the same, in the background, and kept what it had.
    await second.until(() => botInfoCalls(emu) >= 2 || undefined, "the background ask");
  });

  it("a first start with nothing kept does not begin without the platform's answer", async () => {
    const emu = await emulator();
    emu.injectFault({
      match: { path: "/open-apis/bot/v3/info" },
      times: 1_000,
      response: { httpStatus: 500, code: 1, msg: "unavailable" },
    });
    await expect(startFeishuRig({ emulator: emu, transport: "webhook" })).rejects.toThrow();
  });
});
