import { createDecipheriv, createHash, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { AppError } from "../errors.ts";
import { flattenEnvelope } from "./events.ts";

/**
 * What a webhook request proves, decided from its bytes, headers and the time alone (feishu-platform §2.5):
 * no server, no clock of its own, so every refusal can be tested by feeding it a request and a `now`.
 * A request that proves nothing throws an AppError: 401 for a missing or bad signature, a replayed
 * timestamp or a token mismatch; 400 for a body that is not what Feishu sends. webhook.ts answers them.
 *
 * We verify the signature over the raw bytes ourselves (DESIGN §9): the SDK hashes re-serialised JSON,
 * never checks the verification token, and answers a forged request with an empty 200.
 */

export interface WebhookRequest {
  raw: Buffer;
  signature: string | undefined;
  timestamp: string | undefined;
  nonce: string | undefined;
}

export interface WebhookKeys {
  encryptKey: string;
  verificationToken?: string;
  /** How far `X-Lark-Request-Timestamp` may be from now (default 5 min); older requests are replays. */
  maxSkewMs?: number;
}

export type WebhookVerdict =
  /** The console's URL check: answer with the challenge. */
  | { kind: "challenge"; challenge: string }
  /** A genuine event, flattened like the SDK does ({...header, ...event}). */
  | { kind: "event"; eventType: string; data: Record<string, unknown> };

export const DEFAULT_MAX_SKEW_MS = 5 * 60_000;

const encryptedBody = z.object({ encrypt: z.string().min(1) });
const challengeBody = z.object({
  type: z.literal("url_verification"),
  challenge: z.string(),
  token: z.string().optional(),
});

export function verifyWebhook(request: WebhookRequest, keys: WebhookKeys, now: number): WebhookVerdict {
  const { encryptKey, verificationToken } = keys;
  if (request.signature === undefined) {
    // The console's URL check may come unsigned (§2.5); it must still decrypt with our key. Nothing else may.
    const challenge = unsignedChallenge(request.raw, encryptKey, verificationToken);
    if (challenge === undefined) throw unauthorized("Missing X-Lark-Signature");
    return { kind: "challenge", challenge };
  }
  verifySignature(request, request.signature, keys, now);

  const payload = decryptPayload(request.raw, encryptKey);
  const challenge = challengeBody.safeParse(payload);
  if (challenge.success) {
    if (!tokenMatches(challenge.data.token, verificationToken))
      throw unauthorized("Verification token mismatch");
    return { kind: "challenge", challenge: challenge.data.challenge };
  }
  const envelope = flattenEnvelope(payload);
  if (!envelope.ok) throw invalid(`Not a schema 2.0 event: ${envelope.error}`);
  if (!tokenMatches(envelope.value.verificationToken, verificationToken))
    throw unauthorized("Verification token mismatch");
  return { kind: "event", eventType: envelope.value.eventType, data: envelope.value.data };
}

/** Rejects a bad signature or a timestamp outside the window (a replay) with 401. */
function verifySignature(request: WebhookRequest, signature: string, keys: WebhookKeys, now: number): void {
  const timestamp = request.timestamp ?? "";
  const nonce = request.nonce ?? "";
  // §2.5: sha256(timestamp + nonce + encryptKey + rawBody), over the bytes as received, before any parsing.
  const expected = createHash("sha256")
    .update(timestamp + nonce + keys.encryptKey)
    .update(request.raw)
    .digest("hex");
  if (!safeEqual(signature, expected)) throw unauthorized("Bad X-Lark-Signature");
  const sentAtMs = Number(timestamp) * 1000;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - sentAtMs) > (keys.maxSkewMs ?? DEFAULT_MAX_SKEW_MS)) {
    throw unauthorized("X-Lark-Request-Timestamp is outside the allowed window");
  }
}

/** The challenge of an unsigned URL check that decrypts with our key and carries our token; else undefined. */
function unsignedChallenge(raw: Buffer, encryptKey: string, verificationToken: string | undefined) {
  let payload: unknown;
  try {
    payload = decryptPayload(raw, encryptKey);
  } catch (error) {
    // Answered as unsigned (401), not as malformed; anything but a refusal is a bug and goes up.
    if (error instanceof AppError) return undefined;
    throw error;
  }
  const parsed = challengeBody.safeParse(payload);
  if (!parsed.success || !tokenMatches(parsed.data.token, verificationToken)) return undefined;
  return parsed.data.challenge;
}

/** `{"encrypt": base64(iv16 ‖ AES-256-CBC)}` with key sha256(encryptKey) (§2.5) → the JSON inside. */
function decryptPayload(raw: Buffer, encryptKey: string): unknown {
  let outer: unknown;
  try {
    outer = JSON.parse(raw.toString("utf8"));
  } catch (error) {
    throw invalid("Request body is not JSON", error);
  }
  const parsed = encryptedBody.safeParse(outer);
  if (!parsed.success) {
    throw invalid(
      "Request body is not encrypted; webhook mode needs the app's Encrypt Key set in the console",
    );
  }
  let plain: string;
  try {
    const bytes = Buffer.from(parsed.data.encrypt, "base64");
    if (bytes.length < 32 || bytes.length % 16 !== 0) throw new Error("bad ciphertext length");
    const key = createHash("sha256").update(encryptKey).digest();
    const decipher = createDecipheriv("aes-256-cbc", key, bytes.subarray(0, 16));
    plain = Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]).toString("utf8");
  } catch (error) {
    throw invalid("Request body does not decrypt with the configured Encrypt Key", error);
  }
  try {
    return JSON.parse(plain);
  } catch (error) {
    throw invalid("Decrypted body is not JSON", error);
  }
}

/** Only a token that is present and differs is refused; the signature already proves the sender. */
function tokenMatches(received: string | undefined, configured: string | undefined): boolean {
  return configured === undefined || received === undefined || safeEqual(received, configured);
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const unauthorized = (message: string) => new AppError("UNAUTHORIZED", message);
const invalid = (message: string, cause?: unknown) => new AppError("INVALID_INPUT", message, { cause });
