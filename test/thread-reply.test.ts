import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";

/** The messenger's `inThread` replies (issue 19) against the emulator, through the real SDK. */

const card: Card = {
  schema: "2.0",
  config: { update_multi: true },
  body: { elements: [{ tag: "markdown", content: "hi" }] },
};

let emulator: Emulator;
beforeEach(async () => {
  emulator = await startEmulator();
});
afterEach(async () => {
  await emulator.close();
});

const messenger = () =>
  createLarkMessenger({
    appId: emulator.appId,
    appSecret: emulator.appSecret,
    domain: emulator.url,
    logger: createLogger({ level: "silent" }),
    timeoutMs: 2000,
  });
const userMessage = () =>
  emulator.userMessage({ chatType: "group", senderOpenId: "ou_a", text: "hi", mentionBot: true }).event
    .message.message_id;
const replies = (parentId: string) =>
  emulator.callsTo("POST", `/open-apis/im/v1/messages/${parentId}/reply`).map((call) => call.requestBody);

describe("replying in a thread", () => {
  it("sends reply_in_thread only when asked, for cards and texts", async () => {
    const m = messenger();
    const parent = userMessage();
    const plain = await m.replyCard(parent, card);
    const threaded = await m.replyCard(parent, card, { inThread: true });
    const text = await m.sendText({ chatId: "oc_group_emulator" }, "好", { replyTo: parent, inThread: true });
    expect(replies(parent)).toEqual([
      expect.not.objectContaining({ reply_in_thread: expect.anything() }),
      expect.objectContaining({ reply_in_thread: true, msg_type: "interactive" }),
      expect.objectContaining({ reply_in_thread: true, msg_type: "text" }),
    ]);
    expect(emulator.messages.getMessage(plain.messageId)?.threadId).toBeUndefined();
    const threadId = emulator.messages.getMessage(threaded.messageId)?.threadId;
    expect(threadId).toMatch(/^omt_/);
    expect(emulator.messages.getMessage(text.messageId)?.threadId).toBe(threadId);
  });

  // The reply page's two refusals of a thread (feishu-platform §5.1): the group takes none, or the message
  // is an aggregated one.
  it.each([
    [230071, "The group to which the message belongs does not support reply in thread."],
    [230072, "Aggregated messages do not support reply in thread."],
  ])("falls back to a plain reply once when the platform refuses the thread (%i)", async (code, msg) => {
    const m = messenger();
    const parent = userMessage();
    emulator.injectFault({
      match: { method: "POST", path: "/open-apis/im/v1/messages/", bodyIncludes: '"reply_in_thread":true' },
      times: 1,
      response: { httpStatus: 400, code, msg },
    });
    const sent = await m.replyCard(parent, card, { inThread: true, uuid: "run-1" });
    expect(replies(parent)).toEqual([
      expect.objectContaining({ reply_in_thread: true }),
      expect.not.objectContaining({ reply_in_thread: expect.anything() }),
    ]);
    expect(emulator.messages.getMessage(sent.messageId)?.parentId).toBe(parent);
  });

  it.each([
    [230001, "invalid request parameter"],
    [230002, "The bot can not be outside the group."],
    [230019, "The topic does NOT exist."],
  ])("does not retry without the thread on an error that is not a refused thread (%i)", async (code, msg) => {
    const m = messenger();
    const parent = userMessage();
    emulator.injectFault({
      match: { method: "POST", bodyIncludes: '"reply_in_thread":true' },
      times: 1,
      response: { httpStatus: 400, code, msg },
    });
    const error = await m.replyCard(parent, card, { inThread: true }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(FeishuApiError);
    // The error is not about the thread: a plain reply would fail alike, or land a new thread's card in the
    // group's main flow.
    expect(replies(parent)).toHaveLength(1);
  });

  it("does not hide a rate limit or a refused card behind the fallback", async () => {
    const m = messenger();
    const parent = userMessage();
    emulator.injectFault({
      match: { method: "POST", bodyIncludes: '"reply_in_thread":true' },
      times: 1,
      response: { httpStatus: 400, code: 230020, msg: "frequency limit" },
    });
    const error = await m.replyCard(parent, card, { inThread: true }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(FeishuApiError);
    expect(replies(parent)).toHaveLength(1);
  });
});
