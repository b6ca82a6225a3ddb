import { createServer, type Server } from "node:http";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { exampleCards } from "../src/cards/examples.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { LOCAL_USERS, mountConsole } from "../src/local/console/index.ts";
import { MAX_BODY_CHARS } from "../src/local/console/redact.ts";
import { startEmulator } from "../src/local/emulator/index.ts";
import { BODIES_KEPT, Observer } from "../src/local/emulator/observer.ts";
import { createLogger } from "../src/logger.ts";

/**
 * The console's API log carries each Open API call's headers and bodies, with credentials blanked: the bot's
 * real SDK calls the emulator, and the log is read over the console's HTTP API as the page reads it.
 */

const logger = createLogger({ level: "silent" });

/** The parts of `GET /console/api/calls` these tests read. */
const logSchema = z.object({
  entries: z.array(
    z.object({
      kind: z.string(),
      method: z.string().optional(),
      path: z.string().optional(),
      status: z.number().optional(),
      requestHeaders: z.record(z.string(), z.string()).optional(),
      requestBody: z.string().optional(),
      responseBody: z.string().optional(),
    }),
  ),
});
const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function rig() {
  const emulator = await startEmulator({ encryptKey: "log-bodies-key" });
  cleanup.push(() => emulator.close());
  const app = express();
  mountConsole(app, { emulator, botWebhookUrl: () => "http://127.0.0.1:9/feishu/events", logger });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const messenger = createLarkMessenger({
    appId: emulator.appId,
    appSecret: emulator.appSecret,
    domain: emulator.url,
    logger,
  });
  const calls = async () => {
    const body = logSchema.parse(await (await fetch(`${base}/console/api/calls`)).json());
    return body.entries.flatMap((entry) => (entry.kind === "call" ? [entry] : []));
  };
  return { emulator, messenger, calls };
}

describe("the console's API log", () => {
  it("shows request and response bodies with the app secret, tokens and Authorization redacted", async () => {
    const { emulator, messenger, calls } = await rig();
    const cards = exampleCards();
    const alice = LOCAL_USERS[0]?.openId ?? "";
    const { messageId } = await messenger.sendCard({ openId: alice }, cards["progress-running"]!);
    await messenger.patchCard(messageId, cards["progress-completed"]!);
    const entries = await calls();

    const auth = entries.find((e) => e.path?.endsWith("/tenant_access_token/internal"));
    expect(auth?.requestBody).toContain(`"app_id": "${emulator.appId}"`);
    expect(auth?.requestBody).toContain('"app_secret": "[redacted]"');
    expect(auth?.responseBody).toContain('"tenant_access_token": "[redacted]"');
    expect(auth?.responseBody).toContain('"expire"');

    const patch = entries.find((e) => e.method === "PATCH");
    expect(patch?.requestHeaders?.authorization).toBe("Bearer [redacted]");
    // The card inside `content` (a JSON string) is shown as JSON, so it reads as a card.
    expect(patch?.requestBody).toContain('"schema": "2.0"');
    expect(patch?.requestBody).toContain("已完成");
    expect(patch?.responseBody).toContain('"code": 0');

    const everything = JSON.stringify(entries);
    expect(everything).not.toContain(emulator.appSecret);
    expect(everything).not.toMatch(/t-[0-9a-f]{20,}/);
  });

  it("shows an injected gateway fault's text, and clips a huge body with a note", async () => {
    const { emulator, messenger, calls } = await rig();
    const alice = LOCAL_USERS[0]?.openId ?? "";
    const card = exampleCards()["progress-running"]!;
    const { messageId } = await messenger.sendCard({ openId: alice }, card);
    emulator.injectFault({
      match: { method: "PATCH" },
      times: 1,
      response: { httpStatus: 502, msg: "bad gateway" },
    });
    await expect(messenger.patchCard(messageId, card)).rejects.toThrow();
    const huge = {
      ...card,
      body: { elements: [{ tag: "markdown" as const, content: "长".repeat(25_000) }] },
    };
    await messenger.patchCard(messageId, huge).catch(() => undefined);

    const patches = (await calls()).filter((e) => e.method === "PATCH");
    expect(patches[0]?.status).toBe(502);
    expect(patches[0]?.responseBody).toBe("bad gateway");
    const clipped = patches.at(-1)?.requestBody ?? "";
    expect(clipped.length).toBeLessThan(MAX_BODY_CHARS + 100);
    expect(clipped).toMatch(/已截断，共 \d+ 个字符/);
  });

  it("keeps bodies for the latest calls only, so a long run does not hold every card it sent", () => {
    const observer = new Observer((error) => {
      throw error;
    });
    const call = (n: number) => ({
      at: n,
      method: "PATCH",
      path: "/open-apis/im/v1/messages/om_1",
      query: {},
      status: 200,
      code: 0,
      durationMs: 1,
      requestHeaders: { authorization: "Bearer t-x" },
      requestBody: { content: `card ${n}` },
      responseBody: { code: 0 },
    });
    for (let n = 0; n <= BODIES_KEPT; n += 1) observer.record(call(n));
    expect(observer.calls).toHaveLength(BODIES_KEPT + 1);
    expect(observer.calls[0]).toEqual({
      ...call(0),
      requestHeaders: undefined,
      requestBody: undefined,
      responseBody: undefined,
    });
    expect(observer.calls[1]?.requestBody).toEqual({ content: "card 1" });
    expect(observer.calls.at(-1)?.responseBody).toEqual({ code: 0 });
  });
});
