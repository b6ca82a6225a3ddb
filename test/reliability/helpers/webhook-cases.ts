import { createHash } from "node:crypto";
import fc from "fast-check";
import { encryptBody, signBody } from "../../../src/local/emulator/index.ts";
import { junk } from "./arbitraries.ts";
import { ENCRYPT_KEY } from "./stack.ts";

/** Webhook bodies as a bad-input target: generated requests, from unsigned junk to signed events of any shape. */

export type WebhookCase =
  | { kind: "unsigned"; body: string | Uint8Array; contentType: string | undefined }
  | { kind: "signed-raw"; body: string | Uint8Array; contentType: string | undefined }
  | { kind: "signed-encrypted"; payload: unknown }
  | { kind: "bad-encrypt"; encrypt: unknown }
  | { kind: "envelope"; eventType: string; event: Record<string, unknown> };

const rawBody = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? "null"),
  fc.uint8Array({ maxLength: 200 }),
  fc.constantFrom(
    "",
    "{}",
    "[]",
    "null",
    '{"encrypt":""}',
    '{"schema":"2.0"}',
    '{"type":"url_verification","challenge":"x"}',
  ),
);
const contentType = fc.constantFrom(
  undefined,
  "application/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "application/octet-stream",
);

/** A message event that parses but is ignored (not from a user, or a group message not for the bot), or does not parse. */
const messageEvent = fc.record(
  {
    sender: fc.oneof(
      junk,
      fc.record({
        sender_id: fc.oneof(
          junk,
          fc.record({ open_id: fc.oneof(fc.string({ maxLength: 10 }), junk) }, { requiredKeys: [] }),
        ),
        sender_type: fc.constantFrom("app", "bot", "system", "", "USER"),
      }),
    ),
    message: fc.oneof(
      junk,
      fc.record(
        {
          message_id: fc.oneof(fc.string({ maxLength: 10 }), junk),
          chat_id: fc.oneof(fc.string({ maxLength: 10 }), junk),
          chat_type: fc.oneof(fc.constantFrom("p2p", "group", "topic", ""), junk),
          message_type: fc.oneof(fc.constantFrom("text", "post", "image"), junk),
          content: fc.oneof(
            fc.string({ maxLength: 30 }),
            fc.jsonValue().map((v) => JSON.stringify(v) ?? ""),
          ),
          mentions: fc.oneof(
            junk,
            fc.array(fc.record({ key: fc.string({ maxLength: 6 }), id: junk }), { maxLength: 2 }),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

export const webhookCaseArb: fc.Arbitrary<WebhookCase> = fc.oneof(
  fc.record({ kind: fc.constant("unsigned" as const), body: rawBody, contentType }),
  fc.record({ kind: fc.constant("signed-raw" as const), body: rawBody, contentType }),
  fc.record({ kind: fc.constant("signed-encrypted" as const), payload: fc.oneof(junk, fc.jsonValue()) }),
  fc.record({
    kind: fc.constant("bad-encrypt" as const),
    encrypt: fc.oneof(fc.string({ maxLength: 80 }), fc.base64String({ maxLength: 120 }), junk),
  }),
  fc.record({
    kind: fc.constant("envelope" as const),
    eventType: fc.oneof(
      fc.constantFrom("im.message.receive_v1", "card.action.trigger", "im.chat.member.bot.added_v1"),
      fc.string({ maxLength: 20 }),
    ),
    event: fc.oneof(messageEvent, fc.dictionary(fc.string({ maxLength: 10 }), junk, { maxKeys: 4 })),
  }),
);

/** The bytes and headers of one case, as they go on the wire. */
export function webhookRequest(
  testCase: WebhookCase,
  nowMs: number,
): { body: string | Uint8Array; headers: Record<string, string> } {
  const timestamp = String(Math.floor(nowMs / 1000));
  const nonce = `n${Math.random().toString(36).slice(2, 10)}`;
  const signed = (body: string | Uint8Array, type?: string) => {
    const text = typeof body === "string" ? body : Buffer.from(body).toString("latin1");
    const signature =
      typeof body === "string"
        ? signBody(ENCRYPT_KEY, timestamp, nonce, text)
        : signBytes(timestamp, nonce, body);
    return {
      body,
      headers: {
        ...(type ? { "content-type": type } : {}),
        "x-lark-request-timestamp": timestamp,
        "x-lark-request-nonce": nonce,
        "x-lark-signature": signature,
      },
    };
  };
  switch (testCase.kind) {
    case "unsigned":
      return {
        body: testCase.body,
        headers: testCase.contentType ? { "content-type": testCase.contentType } : {},
      };
    case "signed-raw":
      return signed(testCase.body, testCase.contentType);
    case "signed-encrypted":
      return signed(
        JSON.stringify({ encrypt: encryptBody(ENCRYPT_KEY, JSON.stringify(testCase.payload) ?? "null") }),
        "application/json",
      );
    case "bad-encrypt":
      return signed(JSON.stringify({ encrypt: testCase.encrypt }) ?? "null", "application/json");
    case "envelope": {
      const envelope = {
        schema: "2.0",
        header: {
          event_id: `ev_${nonce}`,
          event_type: testCase.eventType,
          create_time: String(nowMs),
          token: "",
          app_id: "cli_x",
          tenant_key: "t",
        },
        event: testCase.event,
      };
      return signed(
        JSON.stringify({ encrypt: encryptBody(ENCRYPT_KEY, JSON.stringify(envelope)) }),
        "application/json",
      );
    }
  }
}

/** The platform's signature over raw bytes (signBody takes text; the body here is not UTF-8). */
function signBytes(timestamp: string, nonce: string, body: Uint8Array): string {
  return createHash("sha256")
    .update(timestamp + nonce + ENCRYPT_KEY)
    .update(body)
    .digest("hex");
}
