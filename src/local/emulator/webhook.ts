import { encryptBody, signBody } from "./crypto.ts";
import { newId } from "./ids.ts";
import type { WebhookResult } from "./types.ts";

export interface DeliveryOptions {
  encryptKey: string | undefined;
  /** Emulator clock (ms), for `X-Lark-Request-Timestamp`. */
  now: number;
  /** Abort after this long (default 10 s; the platform itself gives up after 3 s, §5). */
  timeoutMs?: number;
}

/**
 * POSTs an event or callback the way Feishu does (§2.5). With an encrypt key the body is
 * `{"encrypt":"…"}` and signed over the exact bytes sent; without one the payload goes in the clear.
 */
export async function deliverWebhook(
  targetUrl: string,
  payload: unknown,
  options: DeliveryOptions,
): Promise<WebhookResult> {
  const timestamp = String(Math.floor(options.now / 1000));
  const nonce = newId.nonce();
  const headers: Record<string, string> = {
    "content-type": "application/json; charset=utf-8",
    "x-lark-request-timestamp": timestamp,
    "x-lark-request-nonce": nonce,
  };
  let rawBody: string;
  if (options.encryptKey) {
    rawBody = JSON.stringify({ encrypt: encryptBody(options.encryptKey, JSON.stringify(payload)) });
    headers["x-lark-signature"] = signBody(options.encryptKey, timestamp, nonce, rawBody);
  } else {
    rawBody = JSON.stringify(payload);
  }
  const started = performance.now();
  const response = await fetch(targetUrl, {
    method: "POST",
    headers,
    body: rawBody,
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  const text = await response.text();
  return { status: response.status, body: parseMaybeJson(text), durationMs: performance.now() - started };
}

function parseMaybeJson(text: string): unknown {
  if (text === "") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
