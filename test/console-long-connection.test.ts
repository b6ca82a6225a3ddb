import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { startLongConnection } from "../src/feishu/long-connection.ts";
import type { FeishuEventHandlers } from "../src/feishu/transport.ts";
import { LOCAL_USERS, type LogEntry, mountConsole } from "../src/local/console/index.ts";
import { startEmulator } from "../src/local/emulator/index.ts";
import { contentFor } from "../src/local/emulator/state.ts";
import { createLogger } from "../src/logger.ts";
import { FAST_LONG_CONNECTION } from "./helpers/feishu.ts";

/**
 * The console in local mode's default wiring: no webhook URL, the emulator subscribed to the long connection,
 * and a bot that is the SDK's WSClient. Messages and clicks from the console travel as frames; the API log
 * shows them.
 */

const logger = createLogger({ level: "silent" });
const [ALICE] = LOCAL_USERS as [(typeof LOCAL_USERS)[0]];
const ALICE_CHAT = `oc_p2p_${ALICE.openId}`;
const cards = exampleCards();
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function startRig() {
  const emulator = await startEmulator({ longConnection: FAST_LONG_CONNECTION });
  cleanup.push(() => emulator.close());
  emulator.subscribe({ mode: "long_connection" });
  const messages: Record<string, unknown>[] = [];
  const handlers: FeishuEventHandlers = {
    onMessage: async (data) => {
      messages.push(data);
    },
    onCardAction: async () => ({
      response: {
        toast: { type: "success", content: "已提交" },
        card: { type: "raw", data: cards["progress-completed"] },
      },
    }),
  };
  const connection = startLongConnection({
    appId: emulator.appId,
    appSecret: emulator.appSecret,
    domain: emulator.url,
    handlers,
    logger,
  });
  cleanup.push(() => connection.close());
  await connection.ready;
  const app = express();
  mountConsole(app, { emulator, logger });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/console/api`;
  const post = async (route: string, body: unknown) =>
    (
      await fetch(`${url}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).json() as Promise<Record<string, unknown>>;
  const log = async () => ((await (await fetch(`${url}/calls`)).json()) as { entries: LogEntry[] }).entries;
  return { emulator, messages, post, log };
}

describe("the console over the long connection", () => {
  it("sends a message as a data frame the bot acks, and logs both frames", async () => {
    const rig = await startRig();
    const sent = await rig.post("/messages", { chatId: ALICE_CHAT, userId: ALICE.openId, text: "你好" });
    expect(sent).toMatchObject({ delivered: true, status: 200 });
    expect(rig.messages).toHaveLength(1);
    expect(rig.messages[0]).toMatchObject({ message: { chat_id: ALICE_CHAT } });
    const frames = (await rig.log()).filter((entry) => entry.kind === "call" && entry.method === "WS");
    const paths = frames.map((entry) => (entry.kind === "call" ? entry.path : ""));
    expect(paths.some((p) => p.includes("→ event im.message.receive_v1"))).toBe(true);
    expect(paths.some((p) => p.includes("← ack 200"))).toBe(true);
    expect(paths.some((p) => p.includes("ping"))).toBe(false); // pings and pongs are noise in the log
  });

  it("delivers a click as a callback frame and applies the card that came back in the ack", async () => {
    const rig = await startRig();
    const messenger = createLarkMessenger({
      appId: rig.emulator.appId,
      appSecret: rig.emulator.appSecret,
      domain: rig.emulator.url,
      logger,
    });
    const card = cards["progress-running"];
    if (!card) throw new Error("no example card");
    const { messageId } = await messenger.sendCard({ chatId: ALICE_CHAT }, card);
    const outcome = await rig.post("/actions", { messageId, userId: ALICE.openId, value: { kind: "x" } });
    expect(outcome).toMatchObject({
      card: "applied",
      status: 200,
      toast: { type: "success", content: "已提交" },
    });
    // Applied for the clicker (a callback's card reaches its clicker alone, feishu-platform §2.3).
    const message = rig.emulator.messages.getMessage(messageId);
    expect(JSON.parse(message ? contentFor(message, ALICE.openId) : "")).toEqual(cards["progress-completed"]);
    const callbacks = (await rig.log()).filter((entry) => entry.kind === "callback");
    expect(callbacks).toHaveLength(1);
  });
});
