import { createDecipheriv, createHash, timingSafeEqual } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { flattenEnvelope } from "./events.ts";
import {
  answerCardAction,
  DEFAULT_CALLBACK_BUDGET_MS,
  deliverMessage,
  type FeishuEventHandlers,
} from "./transport.ts";

/**
 * Feishu's webhook transport: `POST /feishu/events` for events and card callbacks (feishu-platform §2.5).
 * We verify the signature over the raw bytes ourselves (DESIGN §9): the SDK hashes re-serialised JSON,
 * never checks the verification token, and answers a forged request with an empty 200.
 */
export interface FeishuWebhookOptions {
  encryptKey: string;
  verificationToken?: string;
  handlers: FeishuEventHandlers;
  logger: Logger;
  now: () => number;
  /** How far `X-Lark-Request-Timestamp` may be from now() (default 5 min); older requests are replays. */
  maxSkewMs?: number;
  /** How long a card callback handler may take (default 2500 ms of Feishu's 3 s). */
  callbackBudgetMs?: number;
  /** Wait after a callback's answer before the card's next PATCH (default DEFAULT_SETTLE_MS). */
  settleMs?: number;
}

export const FEISHU_WEBHOOK_PATH = "/feishu/events";
const MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_MAX_SKEW_MS = 5 * 60_000;

const encryptedBody = z.object({ encrypt: z.string().min(1) });
const challengeBody = z.object({
  type: z.literal("url_verification"),
  challenge: z.string(),
  token: z.string().optional(),
});

export function mountFeishuWebhook(app: express.Express, options: FeishuWebhookOptions): void {
  const log = options.logger.child({ module: "feishu-webhook" });
  const readRaw = express.raw({ type: () => true, limit: MAX_BODY_BYTES });

  // Body-parser errors (too large, aborted) are answered here, not by whatever error middleware the app has.
  const rawBody = (req: Request, res: Response, next: NextFunction) =>
    readRaw(req, res, (error?: unknown) => {
      if (error === undefined) return next();
      const status = (error as { status?: unknown }).status;
      refuse(
        res,
        log,
        new AppError(
          "INVALID_INPUT",
          status === 413 ? "Request body is over 1 MiB" : "Unreadable request body",
          {
            status: typeof status === "number" && status >= 400 && status < 500 ? status : 400,
            cause: error,
          },
        ),
      );
    });

  app.post(FEISHU_WEBHOOK_PATH, rawBody, async (req: Request, res: Response) => {
    try {
      const raw: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      await handle(raw, req, res, options, log);
    } catch (error) {
      if (error instanceof AppError && error.status < 500) return refuse(res, log, error);
      log.error({ err: error }, "webhook request failed");
      // Never a 2xx here: Feishu redelivers a refused event, and one we could not record must come again.
      const status = error instanceof AppError ? error.status : 500;
      const message = error instanceof AppError ? error.message : "Internal error";
      if (!res.headersSent) res.status(status).json({ error: { code: "INTERNAL", message } });
    }
  });
}

async function handle(
  raw: Buffer,
  req: Request,
  res: Response,
  options: FeishuWebhookOptions,
  log: Logger,
): Promise<void> {
  const { encryptKey, verificationToken } = options;
  const signature = req.get("x-lark-signature");
  if (signature === undefined) {
    // The console's URL check may come unsigned (§2.5); it must still decrypt with our key. Nothing else may.
    const challenge = unsignedChallenge(raw, encryptKey, verificationToken);
    if (challenge === undefined) throw unauthorized("Missing X-Lark-Signature");
    res.json({ challenge });
    return;
  }
  verifySignature(raw, signature, req, options);

  const payload = decryptPayload(raw, encryptKey);
  const challenge = challengeBody.safeParse(payload);
  if (challenge.success) {
    if (!tokenMatches(challenge.data.token, verificationToken))
      throw unauthorized("Verification token mismatch");
    res.json({ challenge: challenge.data.challenge });
    return;
  }
  const envelope = flattenEnvelope(payload);
  if (!envelope.ok) throw invalid(`Not a schema 2.0 event: ${envelope.error}`);
  const { eventType, data } = envelope.value;
  if (!tokenMatches(envelope.value.verificationToken, verificationToken)) {
    throw unauthorized("Verification token mismatch");
  }

  await dispatch(eventType, data, res, options, log);
}

/** Rejects a bad signature or a timestamp outside the window (a replay) with 401. */
function verifySignature(raw: Buffer, signature: string, req: Request, options: FeishuWebhookOptions): void {
  const timestamp = req.get("x-lark-request-timestamp") ?? "";
  const nonce = req.get("x-lark-request-nonce") ?? "";
  // §2.5: sha256(timestamp + nonce + encryptKey + rawBody), over the bytes as received, before any parsing.
  const expected = createHash("sha256")
    .update(timestamp + nonce + options.encryptKey)
    .update(raw)
    .digest("hex");
  if (!safeEqual(signature, expected)) throw unauthorized("Bad X-Lark-Signature");
  const sentAtMs = Number(timestamp) * 1000;
  if (
    !/^\d+$/.test(timestamp) ||
    Math.abs(options.now() - sentAtMs) > (options.maxSkewMs ?? DEFAULT_MAX_SKEW_MS)
  ) {
    throw unauthorized("X-Lark-Request-Timestamp is outside the allowed window");
  }
}

async function dispatch(
  eventType: string,
  data: Record<string, unknown>,
  res: Response,
  options: FeishuWebhookOptions,
  log: Logger,
): Promise<void> {
  switch (eventType) {
    case "im.message.receive_v1":
      deliverMessage(options.handlers, data, log);
      res.json({});
      return;
    case "card.action.trigger": {
      // Follow-up PATCHes wait until the answer is out (§2.3: an update before or alongside it reverts).
      // `close` covers a connection dropped meanwhile: then no answer is in flight that an update could race,
      // and its card never reached the platform (so the card it shows is the old one).
      const done = new Promise<boolean>((resolve) => {
        res.once("finish", () => resolve(true));
        res.once("close", () => resolve(res.writableFinished));
      });
      const answer = await answerCardAction(options.handlers, data, {
        budgetMs: options.callbackBudgetMs ?? DEFAULT_CALLBACK_BUDGET_MS,
        logger: log,
        ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
      });
      void done.then((reached) => answer.sent(reached));
      res.json(answer.response);
      return;
    }
    default:
      log.debug({ eventType }, "ignored event type");
      res.json({});
  }
}

/** The challenge of an unsigned URL check that decrypts with our key and carries our token; else undefined. */
function unsignedChallenge(raw: Buffer, encryptKey: string, verificationToken: string | undefined) {
  let payload: unknown;
  try {
    payload = decryptPayload(raw, encryptKey);
  } catch {
    return undefined; // answered as unsigned (401), not as malformed
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

/** Refusals are logged at warn with the reason only: no headers, signature or body (they may carry secrets). */
function refuse(res: Response, log: Logger, error: AppError): void {
  log.warn({ status: error.status, reason: error.message }, "webhook request refused");
  if (!res.headersSent)
    res.status(error.status).json({ error: { code: error.code, message: error.message } });
}
