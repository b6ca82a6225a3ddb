import { describe, expect, it, vi } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import { ACK_DEADLINE_MS, METHOD } from "../src/local/emulator/index.ts";
import { contentFor } from "../src/local/emulator/state.ts";
import { ALICE, longConnectionFixtures, SERVES, sentCard, waitFor } from "./helpers/long-connection.ts";
import { payloadOf } from "./helpers/raw-long-connection.ts";

/**
 * What fails on the platform's side of the long connection, as Feishu treats it: a callback acked after 3 s,
 * a frame typed `card`, an event nobody acks, refused credentials and a full connection quota.
 */

const { emulator, raw, recordingBot } = longConnectionFixtures();

describe("callbacks that fail on the platform's side", () => {
  it("an ack later than 3 s: the click failed, the late answer's card is not applied, and it is never retried", async () => {
    const emu = await emulator();
    const cardId = await sentCard(emu);
    const shown = emu.messages.getMessage(cardId)?.content;
    const client = await raw(emu);
    emu.subscribe({ mode: "long_connection" });

    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const clicking = emu.click({ messageId: cardId, operatorOpenId: ALICE, value: { kind: "x" } });
    const frame = await client.next((f) => f.method === METHOD.data);
    await vi.advanceTimersByTimeAsync(ACK_DEADLINE_MS);
    const outcome = await clicking;
    expect(outcome).toMatchObject({ card: "none", toast: { type: "error" } });
    expect(outcome.error).toMatch(/^200341/);
    const late = {
      toast: { type: "success", content: "迟到" },
      card: { type: "raw", data: exampleCards()["progress-completed"] },
    };
    client.ack(frame, late);
    await waitFor(() => emu.longConnection.frames.some((f) => f.kind === "ack" && f.late));
    expect(emu.messages.getMessage(cardId)?.content).toBe(shown);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(client.data()).toHaveLength(1); // callbacks are never re-sent
  });

  it("the same answer within 3 s is applied: the deadline, not the answer, made the difference", async () => {
    const emu = await emulator();
    const cardId = await sentCard(emu);
    const client = await raw(emu);
    emu.subscribe({ mode: "long_connection" });
    const clicking = emu.click({ messageId: cardId, operatorOpenId: ALICE, value: { kind: "x" } });
    const frame = await client.next((f) => f.method === METHOD.data);
    const completed = exampleCards()["progress-completed"];
    client.ack(frame, {
      toast: { type: "success", content: "及时" },
      card: { type: "raw", data: completed },
    });
    expect(await clicking).toMatchObject({ card: "applied", toast: { content: "及时" }, status: 200 });
    // Applied for the clicker (a callback's card reaches its clicker alone, feishu-platform §2.3).
    const message = emu.messages.getMessage(cardId);
    expect(JSON.parse(message ? contentFor(message, ALICE) : "")).toEqual(completed);
  });

  it("a callback frame typed card (subscription not in effect) is dropped by the SDK: the click times out", async () => {
    const emu = await emulator({ frameType: "card" });
    await (await recordingBot(emu)).connection.ready;
    emu.subscribe({ mode: "long_connection" });
    const cardId = await sentCard(emu);
    const outcome = await emu.click(
      { messageId: cardId, operatorOpenId: ALICE, value: {} },
      { timeoutMs: 300 },
    );
    expect(outcome.error).toMatch(/^200341/);
    expect(emu.longConnection.frames.filter((f) => f.kind === "ack")).toEqual([]);
  });

  it("an event no connection acks is sent again on the redelivery schedule, then given up", async () => {
    const emu = await emulator();
    const client = await raw(emu);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "没人确认" });
    await expect(emu.longConnection.deliver(payload, { timeoutMs: 50 })).rejects.toThrow(/no ack/);
    await waitFor(() => client.data().length === 3); // first try + the two redeliveries configured
    const ids = client.data().map((f) => (payloadOf(f) as { header: { event_id: string } }).header.event_id);
    expect(new Set(ids)).toEqual(new Set([payload.header.event_id]));
    await waitFor(() => emu.longConnection.scheduledRedeliveries === 0);
  });
});

describe("refusals at the endpoint", () => {
  it("stops the SDK for good on bad credentials (514): startLongConnection reports it as fatal", async () => {
    const emu = await emulator();
    const bot = await recordingBot(emu, "not-the-secret");
    await waitFor(() => bot.fatal.length > 0);
    expect(String(bot.fatal[0])).toContain("514");
    expect(emu.longConnection.online).toBe(0);
  });

  it("refuses a connection past the app's quota (1000040350), which the Node SDK takes as fatal", async () => {
    const emu = await emulator({ maxConnections: 1 });
    const first = await recordingBot(emu);
    await first.connection.ready;
    const second = await recordingBot(emu);
    await waitFor(() => second.fatal.length > 0);
    expect(String(second.fatal[0])).toContain("1000040350");
    expect(emu.longConnection.online).toBe(1);
  });

  it("retries an endpoint hiccup (a gateway 502) on reconnect, after ReconnectInterval, and connects", async () => {
    const emu = await emulator();
    const bot = await recordingBot(emu);
    await bot.connection.ready; // from here on the SDK uses our ClientConfig: no nonce, 1 s between attempts
    emu.injectFault({
      match: { method: "POST", path: "/callback/ws/endpoint" },
      times: 1,
      response: { httpStatus: 502 },
    });
    const [before] = emu.longConnection.connectionIds();
    emu.longConnection.drop();
    await waitFor(() => emu.longConnection.online === 1 && emu.longConnection.connectionIds()[0] !== before);
    expect(emu.callsTo("POST", "/callback/ws/endpoint").map((call) => call.status)).toEqual([200, 502, 200]);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "重试之后" });
    expect((await emu.longConnection.deliver(payload, SERVES)).status).toBe(200);
    expect(bot.fatal).toEqual([]);
  });
});
