import express, { type NextFunction, type Request, type Response } from "express";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import {
  answerCardAction,
  DEFAULT_CALLBACK_BUDGET_MS,
  deliverMessage,
  type FeishuEventHandlers,
} from "./transport.ts";
import { verifyWebhook } from "./webhook-verify.ts";

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
  /** Where the app's events are POSTed (default FEISHU_WEBHOOK_PATH; several apps: webhookPathsFor). */
  paths?: readonly string[];
  /** The app this webhook is for: an event whose header names another app is refused (two apps, one key). */
  appId?: string;
}

export const FEISHU_WEBHOOK_PATH = "/feishu/events";

/** Every app's own request URL: `/feishu/<app id>/events` (several apps in one process, issue 30). */
export function appWebhookPath(appId: string): string {
  return `/feishu/${appId}/events`;
}

/**
 * Where an app's webhook answers: its own path, and for the first app also `/feishu/events`, the one path of a
 * single-app setup, so a request URL already entered in the developer console keeps working.
 */
export function webhookPathsFor(appId: string, first: boolean): string[] {
  return first ? [FEISHU_WEBHOOK_PATH, appWebhookPath(appId)] : [appWebhookPath(appId)];
}
const MAX_BODY_BYTES = 1024 * 1024;

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

  app.post([...(options.paths ?? [FEISHU_WEBHOOK_PATH])], rawBody, async (req: Request, res: Response) => {
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
  const verdict = verifyWebhook(
    {
      raw,
      signature: req.get("x-lark-signature"),
      timestamp: req.get("x-lark-request-timestamp"),
      nonce: req.get("x-lark-request-nonce"),
    },
    options,
    options.now(),
  );
  if (verdict.kind === "challenge") {
    res.json({ challenge: verdict.challenge });
    return;
  }
  // Several apps (issue 30): each app's URL takes its own events only, even when two apps share a key.
  const appId = verdict.data.app_id;
  if (options.appId !== undefined && typeof appId === "string" && appId !== options.appId)
    throw new AppError("FORBIDDEN", "The event is for another app than this URL's", { status: 403 });
  await dispatch(verdict.eventType, verdict.data, res, options, log);
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
      await deliverMessage(options.handlers, data, log);
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

/** Refusals are logged at warn with the reason only: no headers, signature or body (they may carry secrets). */
function refuse(res: Response, log: Logger, error: AppError): void {
  log.warn({ status: error.status, reason: error.message }, "webhook request refused");
  if (!res.headersSent)
    res.status(error.status).json({ error: { code: error.code, message: error.message } });
}
