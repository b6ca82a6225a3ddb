import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";

/** The emulator's several apps on one tenant (apps.ts): per-app tokens, bot, rate window and message ownership. */

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";
let emulator: Emulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function tokenOf(e: Emulator, appId: string, appSecret: string): Promise<string> {
  const res = await fetch(`${e.url}/open-apis/auth/v3/tenant_access_token/internal`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ app_id: appId, app_secret: appSecret }),
  });
  const body = (await res.json()) as { code: number; tenant_access_token?: string };
  if (body.code !== 0 || !body.tenant_access_token) throw new Error(`token refused: ${body.code}`);
  return body.tenant_access_token;
}

const call = (e: Emulator, token: string, method: string, path: string, body?: unknown) =>
  fetch(`${e.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));

describe("an emulator with two apps", () => {
  it("issues each app its own token, serves each call as its token's app, and keeps each app's cards its own", async () => {
    const e = await startEmulator({ appId: A, otherApps: [{ appId: B, botOpenId: "ou_bot_b" }] });
    emulator = e;
    // A secret of another app buys nothing.
    await expect(tokenOf(e, B, e.appSecret)).rejects.toThrow("token refused: 10014");
    const a = await tokenOf(e, A, e.appSecret);
    const b = await tokenOf(e, B, e.app(B).appSecret);
    expect(a).not.toBe(b);
    const botA = await call(e, a, "GET", "/open-apis/bot/v3/info");
    const botB = await call(e, b, "GET", "/open-apis/bot/v3/info");
    expect([
      (botA.body.bot as { open_id: string }).open_id,
      (botB.body.bot as { open_id: string }).open_id,
    ]).toEqual([e.botOpenId, "ou_bot_b"]);
    const card = JSON.stringify({
      schema: "2.0",
      config: { update_multi: true },
      body: { elements: [{ tag: "markdown", content: "hi" }] },
    });
    const sent = await call(e, b, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id", {
      receive_id: "oc_shared",
      msg_type: "interactive",
      content: card,
    });
    const messageId = String((sent.body.data as { message_id: string }).message_id);
    expect(e.messages.getMessage(messageId)?.senderId).toBe(B);
    expect((sent.body.data as { sender: { id: string } }).sender.id).toBe(B);
    // App A cannot change app B's card, nor take its clicks.
    const patched = await call(e, a, "PATCH", `/open-apis/im/v1/messages/${messageId}`, { content: card });
    expect(patched.body.code).toBe(230001);
    expect(
      (await call(e, b, "PATCH", `/open-apis/im/v1/messages/${messageId}`, { content: card })).body.code,
    ).toBe(0);
    expect(() => e.app(A).cardAction({ messageId, operatorOpenId: "ou_x", value: {} })).toThrow(/sent by/);
    expect(e.calls.filter((c) => c.method === "PATCH").map((c) => [c.appId, c.code])).toEqual([
      [A, 230001],
      [B, 0],
    ]);
  });

  it("gives each app its own rate window: one app's burst does not limit the other", async () => {
    const e = await startEmulator({ appId: A, appCallsPerSecond: 3, otherApps: [{ appId: B }] });
    emulator = e;
    const a = await tokenOf(e, A, e.appSecret);
    const b = await tokenOf(e, B, e.app(B).appSecret);
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await call(e, a, "GET", "/open-apis/bot/v3/info")).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await call(e, b, "GET", "/open-apis/bot/v3/info")).status).toBe(200);
  });
});
