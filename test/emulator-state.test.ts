import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import { type Emulator, type EmulatorOptions, startEmulator } from "../src/local/emulator/index.ts";

/**
 * The emulator with a state file keeps what Feishu keeps while a bot restarts — messages (and so the chats),
 * threads, mentions, each card's revisions, send uuids — and answers for them after its own restart through
 * the same Open API. Without a file it keeps nothing on disk.
 */

const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };
const ALICE = "ou_alice000000000000000000000000000";
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator(options);
  cleanups.push(() => emu.close());
  return emu;
}

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-emu-state-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function sdk(emu: Emulator): lark.Client {
  return new lark.Client({
    appId: emu.appId,
    appSecret: emu.appSecret,
    domain: emu.url,
    cache: new lark.DefaultCache(),
    loggerLevel: lark.LoggerLevel.error,
    logger: quiet,
  });
}

const card = (name: string) => JSON.stringify(exampleCards()[name]);

describe("the emulator's state file", () => {
  it("gives back messages, threads, mentions, card revisions and uuids after a restart", async () => {
    const stateFile = path.join(tempDir(), "nested", "emulator.sqlite");
    const before = await emulator({ stateFile });
    const asked = before.userMessage({
      chatType: "group",
      chatId: "oc_team",
      senderOpenId: ALICE,
      text: "@_user_1 帮我部署",
      mentionBot: true,
    });
    const userMessageId = asked.event.message.message_id;
    const client = sdk(before);
    const reply = await client.im.message.reply({
      path: { message_id: userMessageId },
      data: { msg_type: "interactive", content: card("progress-running"), uuid: "run-1" },
    });
    const cardId = reply.data?.message_id ?? "";
    await client.im.message.patch({
      path: { message_id: cardId },
      data: { content: card("progress-one-form") },
    });
    const threaded = await client.im.message.reply({
      path: { message_id: cardId },
      data: { msg_type: "text", content: JSON.stringify({ text: "在话题里" }), reply_in_thread: true },
    });
    const pingId = threaded.data?.message_id ?? "";
    before.recall(pingId);
    const snapshot = before.messages.listMessages();
    await before.close();

    const after = await emulator({ stateFile });
    expect(after.messages.listMessages()).toEqual(snapshot);
    expect(after.messages.getMessage(userMessageId)?.mentions).toEqual([
      { key: "@_user_1", openId: after.botOpenId, name: after.botName },
    ]);
    expect(after.messages.getMessage(cardId)).toMatchObject({ revision: 2, patches: 1 });
    expect(after.messages.getMessage(pingId)).toMatchObject({ recalled: true, threadId: expect.any(String) });
    expect(after.messages.cardHistory(cardId).map((r) => [r.revision, r.via, r.content])).toEqual([
      [1, "sent", card("progress-running")],
      [2, "patch", card("progress-one-form")],
    ]);

    // Through the Open API, as the restarted bot sees it.
    const again = sdk(after);
    const fetched = await again.im.message.get({
      path: { message_id: cardId },
      params: { card_msg_content_type: "user_card_content" },
    });
    expect(fetched.data?.items?.[0]?.body?.content).toBe(card("progress-one-form"));
    expect(
      (
        await again.im.message.patch({
          path: { message_id: cardId },
          data: { content: card("progress-completed") },
        })
      ).code,
    ).toBe(0);
    // The same uuid within the hour gives back the card the first process created: no second card.
    const replayed = await again.im.message.reply({
      path: { message_id: userMessageId },
      data: { msg_type: "interactive", content: card("progress-running"), uuid: "run-1" },
    });
    expect(replayed.data?.message_id).toBe(cardId);
    expect(after.messages.listMessages()).toHaveLength(snapshot.length);
    // A recalled message stays recalled.
    const recalledPatch = await again.im.message
      .patch({ path: { message_id: pingId }, data: { content: card("progress-running") } })
      .then(
        () => undefined,
        (error: { response?: { data?: { code?: number } } }) => error.response?.data?.code,
      );
    expect(recalledPatch).toBe(230011);
  });

  it("keeps the last 50 revisions of a card", async () => {
    const stateFile = path.join(tempDir(), "emulator.sqlite");
    const emu = await emulator({ stateFile, perMessagePatchPerSecond: 1000, appCallsPerSecond: 1000 });
    const client = sdk(emu);
    const sent = await client.im.message.create({
      params: { receive_id_type: "chat_id" },
      data: { receive_id: "oc_team", msg_type: "interactive", content: card("progress-running") },
    });
    const cardId = sent.data?.message_id ?? "";
    for (let i = 0; i < 60; i += 1) {
      await client.im.message.patch({
        path: { message_id: cardId },
        data: { content: card(i % 2 === 0 ? "progress-one-form" : "progress-running") },
      });
    }
    const revisions = emu.messages.cardHistory(cardId).map((r) => r.revision);
    expect(revisions).toHaveLength(50);
    expect(revisions.at(0)).toBe(12);
    expect(revisions.at(-1)).toBe(61);
  });

  it("refuses a state file it cannot read with a message naming it, and leaves the file as it was", async () => {
    const stateFile = path.join(tempDir(), "emulator.sqlite");
    fs.writeFileSync(stateFile, "not a database, but somebody's file");
    await expect(startEmulator({ stateFile })).rejects.toThrow(
      `the emulator's state file ${stateFile} cannot be read`,
    );
    expect(fs.readFileSync(stateFile, "utf8")).toBe("not a database, but somebody's file");
  });

  it("without a state file, a restart starts empty (the default for tests)", async () => {
    const before = await emulator();
    before.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "hi" });
    expect(before.messages.listMessages()).toHaveLength(1);
    await before.close();
    const after = await emulator();
    expect(after.messages.listMessages()).toEqual([]);
    expect(after.messages.cardHistory("om_anything")).toEqual([]);
  });
});
