import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { withThreadFallback } from "../src/feishu/thread-fallback.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";

/**
 * The messenger's `inThread` replies (issue 19) against the emulator, through the real SDK, and the channel's
 * fallback (thread-fallback.ts) over it.
 */

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

  it("reports a refused thread as the platform's error, and sends nothing else itself", async () => {
    const parent = userMessage();
    refuseThreads(1, 230071);
    const error = await messenger()
      .replyCard(parent, card, { inThread: true })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(FeishuApiError);
    expect(error).toMatchObject({ feishuCode: 230071, httpStatus: 400, method: "im.message.reply" });
    expect(replies(parent)).toHaveLength(1);
  });

  // The reply page's two refusals of a thread (feishu-platform §5.1): the group takes none, or the message is
  // an aggregated one.
  it.each([230071, 230072])(
    "with the channel's fallback over it, replies once more in the chat when the thread is refused (%i)",
    async (code) => {
      const m = withThreadFallback(messenger(), createLogger({ level: "silent" }));
      const parent = userMessage();
      refuseThreads(2, code);
      const sent = await m.replyCard(parent, card, { inThread: true, uuid: "run-1" });
      const text = await m.sendText({ chatId: "oc_group_emulator" }, "好", {
        replyTo: parent,
        inThread: true,
      });
      expect(replies(parent)).toEqual([
        expect.objectContaining({ reply_in_thread: true, uuid: "run-1" }),
        expect.not.objectContaining({ reply_in_thread: expect.anything() }),
        expect.objectContaining({ reply_in_thread: true, msg_type: "text" }),
        expect.not.objectContaining({ reply_in_thread: expect.anything() }),
      ]);
      expect(replies(parent)[1]).toMatchObject({ uuid: "run-1" });
      for (const id of [sent.messageId, text.messageId]) {
        expect(emulator.messages.getMessage(id)?.parentId).toBe(parent);
        expect(emulator.messages.getMessage(id)?.threadId).toBeUndefined();
      }
    },
  );

  it.each([
    [230001, "invalid request parameter"],
    [230002, "The bot can not be outside the group."],
    [230019, "The topic does NOT exist."],
  ])("does not retry without the thread on an error that is not a refused thread (%i)", async (code, msg) => {
    const m = withThreadFallback(messenger(), createLogger({ level: "silent" }));
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
    expect(error).toMatchObject({ feishuCode: code });
    // Not about the thread: a plain reply would fail alike, or put a new thread's card in the main flow.
    expect(replies(parent)).toHaveLength(1);
  });

  it("does not hide a rate limit or a refused card behind the fallback", async () => {
    const m = withThreadFallback(messenger(), createLogger({ level: "silent" }));
    const parent = userMessage();
    for (const code of [230020, 230099]) {
      emulator.injectFault({
        match: { method: "POST", bodyIncludes: '"reply_in_thread":true' },
        times: 1,
        response: { httpStatus: 400, code, msg: "refused" },
      });
      const error = await m.replyCard(parent, card, { inThread: true }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({ feishuCode: code });
    }
    expect(replies(parent)).toHaveLength(2);
  });
});

function refuseThreads(times: number, code: number): void {
  emulator.injectFault({
    match: { method: "POST", path: "/open-apis/im/v1/messages/", bodyIncludes: '"reply_in_thread":true' },
    times,
    response: {
      httpStatus: 400,
      code,
      msg: "The group to which the message belongs does not support reply in thread.",
    },
  });
}
