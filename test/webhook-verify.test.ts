import { describe, expect, it } from "vitest";
import { AppError } from "../src/errors.ts";
import { verifyWebhook } from "../src/feishu/webhook-verify.ts";
import { encryptBody, signBody, urlVerification } from "../src/local/emulator/crypto.ts";

/**
 * The webhook's verification is pure: bytes, headers and a `now` in, a verdict or a refusal out. Requests are
 * built with the emulator's own crypto (written apart from the bot's), so a shared mistake cannot pass.
 */

const KEY = "verify-test-encrypt-key";
const T0 = 1_764_000_000_000; // when the request was signed
const event = {
  schema: "2.0",
  header: { event_type: "im.message.receive_v1", event_id: "ev_1", token: "tok" },
  event: { message: { message_id: "om_1" } },
};

function signed(payload: unknown, at = T0, key = KEY) {
  const raw = JSON.stringify({ encrypt: encryptBody(key, JSON.stringify(payload)) });
  const timestamp = String(Math.floor(at / 1000));
  return { raw: Buffer.from(raw), signature: signBody(key, timestamp, "n1", raw), timestamp, nonce: "n1" };
}

function refusal(run: () => unknown): { status: number; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return { status: error.status, message: error.message };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("verifyWebhook", () => {
  it("accepts a signed event within the window and flattens it like the SDK", () => {
    const verdict = verifyWebhook(
      signed(event),
      { encryptKey: KEY, verificationToken: "tok" },
      T0 + 4 * 60_000,
    );
    expect(verdict).toEqual({
      kind: "event",
      eventType: "im.message.receive_v1",
      data: {
        event_type: "im.message.receive_v1",
        event_id: "ev_1",
        token: "tok",
        message: { message_id: "om_1" },
      },
    });
  });

  it("refuses a replay: the same request once the window has passed, on the injected clock", () => {
    const request = signed(event);
    expect(verifyWebhook(request, { encryptKey: KEY }, T0 + 5 * 60_000).kind).toBe("event");
    expect(refusal(() => verifyWebhook(request, { encryptKey: KEY }, T0 + 5 * 60_000 + 1001))).toEqual({
      status: 401,
      message: "X-Lark-Request-Timestamp is outside the allowed window",
    });
    expect(
      refusal(() => verifyWebhook(request, { encryptKey: KEY, maxSkewMs: 1000 }, T0 + 60_000)).status,
    ).toBe(401);
  });

  it("refuses a forged signature, another app's key, and a token that differs", () => {
    const request = signed(event);
    expect(
      refusal(() => verifyWebhook({ ...request, signature: "0".repeat(64) }, { encryptKey: KEY }, T0)),
    ).toEqual({
      status: 401,
      message: "Bad X-Lark-Signature",
    });
    expect(refusal(() => verifyWebhook(signed(event, T0, "other-key"), { encryptKey: KEY }, T0)).status).toBe(
      401,
    );
    expect(
      refusal(() => verifyWebhook(request, { encryptKey: KEY, verificationToken: "other" }, T0)),
    ).toEqual({
      status: 401,
      message: "Verification token mismatch",
    });
  });

  it("answers the console's URL check, signed or not, only when it decrypts with our key", () => {
    const check = urlVerification("ch-1", "tok");
    expect(verifyWebhook(signed(check), { encryptKey: KEY }, T0)).toEqual({
      kind: "challenge",
      challenge: "ch-1",
    });
    const unsigned = { ...signed(check), signature: undefined };
    expect(verifyWebhook(unsigned, { encryptKey: KEY, verificationToken: "tok" }, T0)).toEqual({
      kind: "challenge",
      challenge: "ch-1",
    });
    const foreign = { ...signed(check, T0, "other-key"), signature: undefined };
    expect(refusal(() => verifyWebhook(foreign, { encryptKey: KEY }, T0))).toEqual({
      status: 401,
      message: "Missing X-Lark-Signature",
    });
  });

  it("says what is wrong with a body that is not Feishu's: plain JSON, or not JSON at all", () => {
    const plain = Buffer.from(JSON.stringify(event));
    const headers = { timestamp: String(T0 / 1000), nonce: "n" };
    const sign = (raw: Buffer) => signBody(KEY, headers.timestamp, headers.nonce, raw.toString());
    expect(
      refusal(() =>
        verifyWebhook({ raw: plain, signature: sign(plain), ...headers }, { encryptKey: KEY }, T0),
      ),
    ).toMatchObject({
      status: 400,
      message: expect.stringContaining("not encrypted"),
    });
    const junk = Buffer.from("{oops");
    expect(
      refusal(() => verifyWebhook({ raw: junk, signature: sign(junk), ...headers }, { encryptKey: KEY }, T0)),
    ).toEqual({
      status: 400,
      message: "Request body is not JSON",
    });
  });
});
