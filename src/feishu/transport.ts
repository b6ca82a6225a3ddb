import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { bilingual, strings } from "../strings/index.ts";

/**
 * What both Feishu transports (webhook and long connection) hand inbound traffic to, plus the rules they
 * share: a message is acknowledged at once, a card callback is answered within a budget and its
 * follow-ups run only after the answer has gone out (feishu-platform §2.3).
 */
export interface FeishuEventHandlers {
  /** im.message.receive_v1, flattened like the SDK does ({...header, ...event}). Resolves as soon as the event is recorded (acknowledge fast); the handler does its work in the background. Rejects when it could not record the event. */
  onMessage(data: Record<string, unknown>): Promise<void>;
  /**
   * card.action.trigger, flattened. Resolves with the callback response body ({toast}, {toast, card:{type:"raw",
   * data}} or {}) and a function the transport calls once the response has been SENT and the settle delay has
   * passed (PATCHes wait for it: Feishu reverts an update made before or in parallel with the response).
   * `delivered` is false when the transport sent the timeout toast instead of this response.
   */
  onCardAction(
    data: Record<string, unknown>,
  ): Promise<{ response: Record<string, unknown>; afterResponse?: (delivered: boolean) => void }>;
}

/** Feishu waits 3 s for a callback answer and never retries (§2.3); keep the rest for the network. */
export const DEFAULT_CALLBACK_BUDGET_MS = 2500;

/**
 * How long after a callback's answer went out the card's next PATCH waits (docs/long-connection.md §Settle).
 * The docs only say "after"; a field report needed about 1 s before an update stuck (FEISHU_CALLBACK_SETTLE_MS).
 */
export const DEFAULT_SETTLE_MS = 1000;

/**
 * The toast sent when a callback handler fails or overruns its budget: in the bot's language, and in every
 * language in `i18n` (the client shows its own). Built at call time: the locale is chosen after imports.
 */
export function timeoutResponse(): Record<string, unknown> {
  return {
    toast: { type: "error", content: strings.feishu.callbackTimeout, i18n: bilingual.feishu.callbackTimeout },
  };
}

/**
 * Hands a message event over: resolves once the handler recorded it (one transaction); its work goes on in
 * the background, so the acknowledgement is quick (Feishu redelivers what is not acknowledged within 3 s, §5).
 * A rejection means the event was NOT recorded (the database refused): it becomes a 503 the transport must
 * not turn into an acknowledgement, so Feishu redelivers it (webhook: non-2xx; long connection: the SDK
 * answers the frame with code 500).
 */
export async function deliverMessage(
  handlers: FeishuEventHandlers,
  data: Record<string, unknown>,
  log: Logger,
): Promise<void> {
  try {
    await handlers.onMessage(data);
  } catch (error) {
    log.error({ err: error }, "message not recorded; refusing it so Feishu redelivers");
    throw new AppError("INTERNAL", "The event could not be recorded; redeliver it", {
      cause: error,
      status: 503,
    });
  }
}

export interface AnsweredCardAction {
  /** The body to send: the handler's when it answered in time with a JSON object, else the timeout toast. */
  response: Record<string, unknown>;
  /**
   * Call once the response has been sent (`reached: false` when the connection closed before it could be).
   * Runs the handler's afterResponse, at most once, `settleMs` later.
   */
  sent(reached?: boolean): void;
}

/**
 * Runs onCardAction, but never past `budgetMs`. When the handler overruns and finishes later, its
 * afterResponse still runs (once the timeout answer was sent and settled), since its state change happened.
 */
export async function answerCardAction(
  handlers: FeishuEventHandlers,
  data: Record<string, unknown>,
  options: { budgetMs: number; logger: Logger; settleMs?: number },
): Promise<AnsweredCardAction> {
  const { budgetMs, logger: log } = options;
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  let settled = false;
  let reachedPlatform = true;
  let followUp: { run: (delivered: boolean) => void; delivered: boolean } | undefined;
  const runFollowUp = () => {
    if (!settled || !followUp) return;
    const { run, delivered } = followUp;
    followUp = undefined;
    runLogged(() => run(delivered && reachedPlatform), log, "card afterResponse failed");
  };
  const answer = (response: Record<string, unknown>): AnsweredCardAction => {
    let called = false;
    return {
      response,
      sent: (reached = true) => {
        if (called) return;
        called = true;
        reachedPlatform = reached;
        const ready = () => {
          settled = true;
          runFollowUp();
        };
        if (settleMs > 0) setTimeout(ready, settleMs);
        else ready();
      },
    };
  };

  const outcome = settle(() => handlers.onCardAction(data));
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<"expired">((resolve) => {
    timer = setTimeout(resolve, budgetMs, "expired");
  });
  const first = await Promise.race([outcome, expired]);
  clearTimeout(timer);

  if (first === "expired") {
    log.warn({ budgetMs }, "card handler overran its budget; answered with the timeout toast");
    void outcome.then((late) => {
      if (!late.ok) return log.error({ err: late.error }, "card handler failed after its budget");
      const run = late.value?.afterResponse;
      // What went out was the timeout toast, not this handler's card.
      if (run) followUp = { run, delivered: false };
      runFollowUp();
    });
    return answer(timeoutResponse());
  }
  if (!first.ok) {
    log.error({ err: first.error }, "card handler failed");
    return answer(timeoutResponse());
  }
  const run = first.value?.afterResponse;
  const body = first.value?.response;
  const delivered = body !== undefined && body !== null && isJsonObject(body);
  if (run) followUp = { run, delivered };
  if (body === undefined || body === null) return answer({}); // "no update" is `{}`, never an empty body
  if (isJsonObject(body)) return answer(body);
  // A malformed body is error 200672 on the client (§2.3); the toast at least says something.
  log.error("card handler returned a response that is not a JSON object");
  return answer(timeoutResponse());
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Never rejects, and turns a synchronous throw into a failure too. */
function settle<T>(run: () => Promise<T>): Promise<Settled<T>> {
  return Promise.resolve()
    .then(run)
    .then(
      (value): Settled<T> => ({ ok: true, value }),
      (error: unknown): Settled<T> => ({ ok: false, error }),
    );
}

/** Runs a `void` callback; an async one still type-checks as `void`, so its rejection is caught too. */
function runLogged(run: () => void, log: Logger, message: string): void {
  try {
    const result: unknown = run();
    if (result instanceof Promise) result.catch((error: unknown) => log.error({ err: error }, message));
  } catch (error) {
    log.error({ err: error }, message);
  }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}
