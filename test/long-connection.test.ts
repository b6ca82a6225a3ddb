import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, METHOD } from "../src/local/emulator/index.ts";
import { formsOn } from "./helpers/feishu.ts";
import { ALICE, askedCard, longConnectionFixtures, SERVES, waitFor } from "./helpers/long-connection.ts";
import { endpoint, payloadOf } from "./helpers/raw-long-connection.ts";

/**
 * The long connection at the wire: the SDK's real WSClient (through our startLongConnection) against the
 * emulator's pbbp2 server. Waits are real but short: the SDK's own timers cannot be faked, so ClientConfig
 * makes them short (reconnect after 1 s, no random nonce) and redeliveries come after 100 ms. Failures on the
 * platform's side (late acks, refusals) are in long-connection-failures.test.ts.
 */

const { emulator, rig, raw, recordingBot, cleanup } = longConnectionFixtures();

describe("the emulator's long-connection endpoint and handshake", () => {
  it("hands out a ticket URL and ClientConfig for the app's credentials, and refuses others", async () => {
    const emu = await emulator();
    const ok = await endpoint(emu);
    expect(ok.code).toBe(0);
    expect(ok.data.URL).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/ws\/v2\?.*device_id=\d+.*service_id=\d+.*ticket=/);
    expect(ok.data.ClientConfig).toEqual({
      PingInterval: 5,
      ReconnectCount: -1,
      ReconnectInterval: 1,
      ReconnectNonce: 0,
    });
    expect((await endpoint(emu, "wrong-secret")).code).toBe(514);
    expect(emu.callsTo("POST", "/callback/ws/endpoint")).toHaveLength(2);
  });

  it("answers a ping with a pong carrying ClientConfig, and hands live changes to the next pong", async () => {
    const emu = await emulator();
    const client = await raw(emu);
    client.ping();
    const pong = await client.next((f) => f.method === METHOD.control && f.headers.type === "pong");
    expect(payloadOf(pong)).toMatchObject({ PingInterval: 5, ReconnectInterval: 1 });
    emu.longConnection.configure({ pingIntervalS: 1 });
    client.frames.length = 0;
    client.ping();
    const second = await client.next((f) => f.headers.type === "pong");
    expect(payloadOf(second)).toMatchObject({ PingInterval: 1 });
  });

  it("refuses an upgrade without a live ticket, and a ticket twice", async () => {
    const emu = await emulator();
    const url = (await endpoint(emu)).data.URL ?? "";
    const { WebSocket } = await import("ws");
    const open = (target: string) =>
      new Promise<string>((resolve) => {
        const ws = new WebSocket(target);
        ws.once("open", () => {
          resolve("open");
          cleanup.push(() => ws.terminate());
        });
        ws.once("unexpected-response", (_req, res) => resolve(String(res.headers["handshake-status"])));
        ws.once("error", () => resolve("error"));
      });
    expect(await open(url)).toBe("open");
    expect(await open(url)).toBe("403"); // one-time ticket
    expect(await open(url.replace(/ticket=\w+/, "ticket=forged"))).toBe("403");
  });
});

describe("the bot over the long connection (real WSClient)", () => {
  it("gets a message as a data frame, acks it, and a click is answered through the ack and applied to the card", async () => {
    const emu = await emulator();
    const r = await rig(emu);
    const { cardId, requestId } = await askedCard(r);
    const ask = r.core.registry.get(requestId);
    const outcome = await emu.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId, requestId, sender: ALICE },
      formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0", "2"], ask0_c1: "" },
      name: "ask0_submit",
    });
    expect(outcome).toMatchObject({
      status: 200,
      card: "applied",
      toast: { type: "success", content: "已提交" },
    });
    // The answer's card is what the clicker's message shows now; the others see it once the bot PATCHes.
    expect(formsOn(r.cardOf(cardId, ALICE))).toEqual([]);

    const frames = emu.longConnection.frames;
    const message = frames.find((f) => f.kind === "event" && f.eventType === "im.message.receive_v1");
    const callback = frames.find((f) => f.kind === "event" && f.eventType === "card.action.trigger");
    expect(message).toBeDefined();
    expect(callback).toBeDefined();
    const acks = frames.filter((f) => f.kind === "ack");
    expect(acks.find((f) => f.frameId === message?.frameId)).toMatchObject({ code: 200 });
    expect(acks.find((f) => f.frameId === callback?.frameId)).toMatchObject({ code: 200, attempt: 1 });
    expect(frames.some((f) => f.kind === "ping")).toBe(true); // the SDK pings on open
  });

  it("after a click, the card's next PATCH waits for the ack plus the settle delay, then lands the state of then", async () => {
    const emu = await emulator();
    const settleMs = 400;
    const r = await rig(emu, { settleMs });
    const { cardId, requestId } = await askedCard(r);
    const ask = r.core.registry.get(requestId);
    const outcome = await emu.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId, requestId, sender: ALICE },
      formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0"], ask0_c1: "" },
      name: "ask0_submit",
    });
    expect(outcome.card).toBe("applied");
    const ackAt = emu.longConnection.frames.findLast((f) => f.kind === "ack")?.at ?? 0;
    // The demo agent goes on at once (steps, then done); none of it may reach the card before the settle.
    await r.until(() => r.cardOf(cardId).header?.template === "green", "the completed card");
    const patches = emu.callsTo("PATCH", `/open-apis/im/v1/messages/${cardId}`).filter((c) => c.at >= ackAt);
    expect(patches.length).toBeGreaterThan(0);
    // The settle timer starts when the SDK has handed the ack to its socket, a moment before it arrives here.
    expect((patches[0]?.at ?? 0) - ackAt).toBeGreaterThanOrEqual(settleMs - 20);
  });

  it("reassembles a payload split into several frames, sent out of order", async () => {
    const emu = await emulator();
    const r = await rig(emu);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "拆分的消息 ".repeat(50) });
    const ack = await emu.longConnection.deliver(payload, { fragments: 3, reverse: true });
    expect(ack.status).toBe(200);
    const parts = emu.longConnection.frames.filter(
      (f) => f.kind === "event" && f.eventId === payload.header.event_id,
    );
    expect(parts.map((f) => [f.seq, f.sum])).toEqual([
      [2, 3],
      [1, 3],
      [0, 3],
    ]);
    const cardId = await r.progressCard(payload.event.message.message_id);
    expect(cardId).toMatch(/^om_/);
  });

  it("an event missing a fragment is never acked; its redelivery arrives whole and is handled", async () => {
    const emu = await emulator();
    const r = await rig(emu);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "丢了一片 ".repeat(40) });
    await expect(
      emu.longConnection.deliver(payload, { fragments: 3, lose: [1], timeoutMs: 300 }),
    ).rejects.toThrow(/no ack/);
    const cardId = await r.progressCard(payload.event.message.message_id); // from the redelivery (100 ms later)
    expect(cardId).toMatch(/^om_/);
    const attempts = emu.longConnection.frames.filter(
      (f) => f.kind === "event" && f.eventId === payload.header.event_id,
    );
    expect(attempts.map((f) => [f.attempt, f.seq])).toEqual([
      [1, 0],
      [1, 2],
      [2, 0],
    ]);
  });

  it("reconnects through a fresh endpoint call after the platform drops the connection, and keeps working", async () => {
    const emu = await emulator();
    const r = await rig(emu);
    const [before] = emu.longConnection.connectionIds();
    expect(emu.longConnection.drop()).toBe(1);
    const endpointCalls = emu.callsTo("POST", "/callback/ws/endpoint").length;
    await waitFor(() => emu.longConnection.online === 1 && emu.longConnection.connectionIds()[0] !== before);
    expect(emu.callsTo("POST", "/callback/ws/endpoint").length).toBe(endpointCalls + 1);
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "重连之后" });
    expect(await r.progressCard(userMessageId)).toMatch(/^om_/);
  });

  it("redelivers an event whose ack was lost, and the bot handles it once", async () => {
    const emu = await emulator();
    const r = await rig(emu);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "只处理一次" });
    // The bot handles it, but its ack is lost: the platform counts the delivery as failed and sends it again.
    emu.longConnection.loseAcks(1);
    await expect(emu.longConnection.deliver(payload, { timeoutMs: 300 })).rejects.toThrow(/no ack/);
    const attempts = () =>
      emu.longConnection.frames.filter((f) => f.kind === "event" && f.eventId === payload.header.event_id);
    await waitFor(() => attempts().some((f) => f.attempt === 2));
    const second = attempts().find((f) => f.attempt === 2);
    await waitFor(() =>
      emu.longConnection.frames.some((f) => f.kind === "ack" && f.frameId === second?.frameId),
    );
    expect(emu.longConnection.frames.some((f) => f.kind === "ack" && f.detail === "lost (injected)")).toBe(
      true,
    );
    await r.progressCard(payload.event.message.message_id);
    await r.channel.idle();
    const cards = emu.messages
      .listMessages()
      .filter((m) => m.parentId === payload.event.message.message_id && m.msgType === "interactive");
    expect(cards).toHaveLength(1); // the same event_id twice is one task
  });

  it("with two connections (cluster mode), each event goes to exactly one of them", async () => {
    const emu = await emulator();
    const a = await recordingBot(emu);
    const b = await recordingBot(emu);
    await Promise.all([a.connection.ready, b.connection.ready]);
    await waitFor(() => emu.longConnection.online === 2); // both have pinged
    expect(emu.longConnection.online).toBe(2);
    const sent = Array.from({ length: 24 }, (_, i) =>
      emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: `第 ${i} 条` }),
    );
    for (const payload of sent) expect((await emu.longConnection.deliver(payload, SERVES)).status).toBe(200);
    const ids = (got: Record<string, unknown>[]) => got.map((data) => String(data.event_id));
    expect([...ids(a.messages), ...ids(b.messages)].sort()).toEqual(
      sent.map((p) => p.header.event_id).sort(),
    );
    expect(a.messages.length).toBeGreaterThan(0);
    expect(b.messages.length).toBeGreaterThan(0);
  });

  it("survives malformed frames (garbage, text, a data frame without sum/seq) and handles the next event", async () => {
    const emu = await emulator();
    const bot = await recordingBot(emu);
    await bot.connection.ready;
    emu.longConnection.sendRaw(new Uint8Array([0xff, 0x01, 0x02, 0x03]));
    emu.longConnection.sendRaw("not a protobuf frame");
    const [connection] = emu.longConnection.connectionIds();
    emu.longConnection.sendRaw(
      encodeFrame({ SeqID: 1, LogID: 1, service: 1, method: METHOD.data, headers: { type: "event" } }),
      connection,
    );
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "还活着吗" });
    expect((await emu.longConnection.deliver(payload, SERVES)).status).toBe(200);
    expect(bot.messages.map((data) => data.event_id)).toEqual([payload.header.event_id]);
    expect(emu.longConnection.online).toBe(1);
    expect(bot.fatal).toEqual([]);
  });

  it("survives 300 random frames (random bytes, and well-formed frames with random headers and payloads)", async () => {
    const emu = await emulator();
    const bot = await recordingBot(emu);
    await bot.connection.ready;
    const text = fc.string({ maxLength: 12 });
    const header = fc.record(
      {
        type: fc.constantFrom("event", "card", "ping", "pong", ""),
        message_id: text,
        sum: fc.oneof(fc.constantFrom("0", "1", "2", "-1", "NaN", "1e9"), text),
        seq: fc.oneof(fc.constantFrom("0", "1", "5"), text),
        trace_id: text,
      },
      { requiredKeys: [] },
    );
    const frames = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc
        .record({
          method: fc.constantFrom(0, 1, 2),
          headers: header,
          payload: fc.oneof(
            fc.uint8Array({ maxLength: 64 }),
            fc.json().map((j) => new TextEncoder().encode(j)),
          ),
        })
        .map((f) => encodeFrame({ SeqID: 1, LogID: 1, service: 1, ...f })),
    );
    for (const frame of fc.sample(frames, { numRuns: 300, seed: 12 })) emu.longConnection.sendRaw(frame);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "之后的消息" });
    expect((await emu.longConnection.deliver(payload, SERVES)).status).toBe(200);
    expect(bot.messages.map((data) => data.event_id)).toContain(payload.header.event_id);
    expect(emu.longConnection.online).toBe(1);
    expect(bot.fatal).toEqual([]);
  });
});
