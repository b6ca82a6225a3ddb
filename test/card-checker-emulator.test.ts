import fs from "node:fs";
import path from "node:path";
import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";

/**
 * The emulator judges cards with its own checker on every path a card reaches it: send, reply, PATCH,
 * the delayed update and a callback response. Through the real SDK, over HTTP.
 */

const T0 = Date.UTC(2026, 11, 1, 2, 0, 0);
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };
const running: Emulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((emu) => emu.close()));
});

async function setup(): Promise<{ emu: Emulator; client: lark.Client }> {
  const emu = await startEmulator({ now: () => T0 });
  running.push(emu);
  const client = new lark.Client({
    appId: emu.appId,
    appSecret: emu.appSecret,
    domain: emu.url,
    cache: new lark.DefaultCache(),
    loggerLevel: lark.LoggerLevel.error,
    logger: quiet,
  });
  return { emu, client };
}

const golden = (name: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "..", "cards", `${name}.json`), "utf8"));

/** The cancelled card as the builder made it before the fix: its tag was grey. */
function greyCancelled(): Record<string, unknown> {
  const card = golden("progress-cancelled");
  return JSON.parse(JSON.stringify(card).replace('"color":"neutral"', '"color":"grey"'));
}

const simple = (elements: unknown[]) => ({
  schema: "2.0",
  config: { update_multi: true },
  body: { elements },
});

async function send(client: lark.Client, content: string) {
  return client.im.message.create({
    params: { receive_id_type: "chat_id" },
    data: { receive_id: "oc_chat1", msg_type: "interactive", content },
  });
}

/** The platform's error body of a refused call (the SDK rejects with an AxiosError on HTTP 400). */
const refusedShape = z.object({
  response: z.object({ data: z.object({ code: z.number().optional(), msg: z.string().optional() }) }),
});
async function refusal(promise: Promise<unknown>): Promise<{ code?: number; msg?: string }> {
  const error: unknown = await promise.then(
    () => new Error("expected the call to be refused"),
    (reason: unknown) => reason,
  );
  const parsed = refusedShape.safeParse(error);
  if (!parsed.success) throw error;
  return parsed.data.response.data;
}

describe("emulator card checks", () => {
  it("refuses the old grey tag on send with 230099 naming the rule and where it is broken", async () => {
    const { client } = await setup();
    const refused = await refusal(send(client, JSON.stringify(greyCancelled())));
    expect(refused.code).toBe(230099);
    expect(refused.msg).toContain("ErrCode: 200621");
    expect(refused.msg).toContain("[tag-color] header.i18n_text_tag_list.zh_cn[0].color");
    expect((await send(client, JSON.stringify(golden("progress-cancelled")))).code).toBe(0);
  });

  it("answers a markdown image with sub-code 200570 and a 1.0 note with 200861", async () => {
    const { client } = await setup();
    const image = await refusal(
      send(client, JSON.stringify(simple([{ tag: "markdown", content: "![x](https://a/b.png)" }]))),
    );
    expect(image.msg).toMatch(/ErrCode: 200570; ErrMsg: \[md-image\]/);
    const note = await refusal(send(client, JSON.stringify(simple([{ tag: "note", elements: [] }]))));
    expect(note.msg).toMatch(/ErrCode: 200861; ErrMsg: \[v1-only\]/);
  });

  it("takes a card of exactly 30,720 content bytes and refuses one more byte with 230025", async () => {
    const { client } = await setup();
    const padded = (bytes: number) => {
      const base = JSON.stringify(JSON.stringify(simple([{ tag: "markdown", content: "" }]))).length;
      return JSON.stringify(simple([{ tag: "markdown", content: "x".repeat(bytes - base) }]));
    };
    expect(Buffer.byteLength(JSON.stringify(padded(30_720)))).toBe(30_720);
    expect((await send(client, padded(30_720))).code).toBe(0);
    const refused = await refusal(send(client, padded(30_721)));
    expect(refused).toMatchObject({ code: 230025 });
    expect(refused.msg).toContain("[size]");
  });

  it("refuses a bad PATCH and a bad delayed update without touching the card", async () => {
    const { emu, client } = await setup();
    const sent = await send(client, JSON.stringify(golden("progress-running")));
    const id = sent.data?.message_id ?? "";
    const patch = client.im.message.patch({
      path: { message_id: id },
      data: { content: JSON.stringify(greyCancelled()) },
    });
    expect((await refusal(patch)).msg).toContain("[tag-color]");
    const action = emu.cardAction({ messageId: id, operatorOpenId: "ou_alice", value: { kind: "x" } });
    const update = client.request({
      method: "POST",
      url: "/open-apis/interactive/v1/card/update",
      data: { token: action.event.token, card: greyCancelled() },
    });
    expect((await refusal(update)).msg).toContain("[tag-color]");
    expect(emu.messages.getMessage(id)).toMatchObject({
      patches: 0,
      content: JSON.stringify(golden("progress-running")),
    });
  });

  it("does not apply a callback answer's card that breaks a rule: the client shows 200673", async () => {
    const { emu, client } = await setup();
    const id = (await send(client, JSON.stringify(golden("progress-one-form")))).data?.message_id ?? "";
    const refused = emu.applyCallbackCard(id, greyCancelled(), "ou_clicker");
    expect(refused).toMatchObject({ ok: false, code: 200673 });
    expect(refused.ok ? "" : refused.reason).toContain("[tag-color]");
    expect(emu.applyCallbackCard(id, golden("progress-cancelled"), "ou_clicker")).toMatchObject({ ok: true });
  });
});
