import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";

/** The emulator's CardKit: entities sent by card_id, and each rule a transport can break. */

const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };
const ALICE = "ou_alice000000000000000000000000000";
const emus: Emulator[] = [];
afterEach(async () => {
  for (const emu of emus.splice(0)) await emu.close();
});

function card(text: string, streaming = true) {
  return {
    schema: "2.0",
    config: { update_multi: true, streaming_mode: streaming },
    body: { elements: [{ tag: "markdown", element_id: "answer", content: text }] },
  };
}

async function rig() {
  const emu = await startEmulator();
  emus.push(emu);
  const client = new lark.Client({
    appId: emu.appId,
    appSecret: emu.appSecret,
    domain: emu.url,
    cache: new lark.DefaultCache(),
    loggerLevel: lark.LoggerLevel.error,
    logger: quiet,
  });
  const call = async (method: string, url: string, data: unknown): Promise<number> => {
    try {
      const res = (await client.request({ method, url, data })) as { code: number };
      return res.code;
    } catch (error) {
      return (error as { response?: { data?: { code?: number } } }).response?.data?.code ?? -1;
    }
  };
  const created = (await client.request({
    method: "POST",
    url: "/open-apis/cardkit/v1/cards",
    data: { type: "card_json", data: JSON.stringify(card("")) },
  })) as { data: { card_id: string } };
  const cardId = created.data.card_id;
  const asked = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "hi" });
  const sent = (await client.request({
    method: "POST",
    url: `/open-apis/im/v1/messages/${asked.event.message.message_id}/reply`,
    data: { msg_type: "interactive", content: JSON.stringify({ type: "card", data: { card_id: cardId } }) },
  })) as { data: { message_id: string } };
  const messageId = sent.data.message_id;
  const stream = (text: string, sequence: number) =>
    call("PUT", `/open-apis/cardkit/v1/cards/${cardId}/elements/answer/content`, { content: text, sequence });
  const shown = () =>
    JSON.parse(emu.messages.getMessage(messageId)?.content ?? "{}").body.elements[0].content;
  return { emu, call, cardId, messageId, stream, shown, asked };
}

describe("the emulator's CardKit", () => {
  it("shows an entity sent by card_id and types its streamed text into the message", async () => {
    const { stream, shown } = await rig();
    expect(await stream("你", 1)).toBe(0);
    expect(await stream("你好", 2)).toBe(0);
    expect(shown()).toBe("你好");
  });

  it("refuses a sequence that is not strictly increasing (300317), and an entity sent twice", async () => {
    const { stream, call, cardId, asked } = await rig();
    expect(await stream("a", 5)).toBe(0);
    expect(await stream("ab", 5)).toBe(300317);
    expect(await stream("ab", 4)).toBe(300317);
    expect(await stream("ab", 6)).toBe(0);
    const again = await call("POST", `/open-apis/im/v1/messages/${asked.event.message.message_id}/reply`, {
      msg_type: "interactive",
      content: JSON.stringify({ type: "card", data: { card_id: cardId } }),
    });
    expect(again).not.toBe(0);
  });

  it("allows 10 operations per second per entity", async () => {
    const { stream } = await rig();
    const codes: number[] = [];
    for (let i = 1; i <= 11; i += 1) codes.push(await stream("x".repeat(i), i));
    expect(codes.slice(0, 10).every((code) => code === 0)).toBe(true);
    expect(codes[10]).toBe(300316);
  });

  it("closes streaming 600 s after it was opened: 200850 once, then 300309, until reopened", async () => {
    const { emu, stream, call, cardId } = await rig();
    expect(await stream("a", 1)).toBe(0);
    emu.clock.advance(600_000);
    expect(await stream("ab", 2)).toBe(200850);
    expect(await stream("ab", 3)).toBe(300309);
    const settings = JSON.stringify({ config: { streaming_mode: true } });
    expect(
      await call("PATCH", `/open-apis/cardkit/v1/cards/${cardId}/settings`, { settings, sequence: 4 }),
    ).toBe(0);
    expect(await stream("ab", 5)).toBe(0);
  });

  it("refuses every update while a callback is in progress (200810)", async () => {
    const { stream, messageId } = await rig();
    const http = await import("node:http");
    const server = http.createServer((_req, res) => {
      void stream("during", 1).then((code) => {
        during = code;
        res.setHeader("content-type", "application/json");
        res.end("{}");
      });
    });
    let during = 0;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    emus[0]?.subscribe({ mode: "webhook", url: `http://127.0.0.1:${port}/` });
    await emus[0]?.click({ messageId, operatorOpenId: ALICE, value: {} });
    server.close();
    expect(during).toBe(200810);
    expect(await stream("after", 2)).toBe(0);
  });

  it("refuses duplicate element ids and cards over 30 KB", async () => {
    const { call } = await rig();
    const twice = card("a");
    twice.body.elements.push({ tag: "markdown", element_id: "answer", content: "b" });
    expect(
      await call("POST", "/open-apis/cardkit/v1/cards", { type: "card_json", data: JSON.stringify(twice) }),
    ).toBe(300301);
    const big = JSON.stringify(card("字".repeat(12_000)));
    expect(await call("POST", "/open-apis/cardkit/v1/cards", { type: "card_json", data: big })).toBe(200860);
  });
});
