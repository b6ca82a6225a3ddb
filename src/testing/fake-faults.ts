import { FeishuApiError, type FeishuMessenger } from "../feishu/messenger.ts";
import { FeishuError } from "../local/emulator/errors.ts";

/** A messenger method by name: what a fault matches and a recorded call names. */
export type MessengerMethod = keyof FeishuMessenger;

/**
 * What a faulted call gets instead of the platform's answer: Feishu's code (with the HTTP status it travels
 * on, 400 by default like the emulator's business errors, and the reset header in seconds), a bare gateway
 * failure (an HTTP status without a code), or a delay before the call is handled normally.
 *
 * A delay past the messenger's timeout fails the call as a timeout. What the platform does with it then is
 * the emulator's two cases: by default the call is lost (its delay holds the request before the body is
 * read, and the SDK's abort cuts it); with `landsLate` it had been read and is applied when the delay ends,
 * after the caller gave up (a PATCH that "failed" but shows up on the card).
 */
export type FakeFaultResponse =
  | { code?: number; httpStatus?: number; resetSeconds?: number; msg?: string }
  | { delayMs: number; landsLate?: boolean };

export interface FakeFault {
  /** Which calls: one method, several, or (omitted) every call. */
  method?: MessengerMethod | readonly MessengerMethod[];
  /** Only calls about this message (a reply's parent; a PATCH's, recall's or lookup's message). */
  messageId?: string;
  /**
   * Only calls whose content contains this text: a card's JSON or a text message's, as sent (the emulator's
   * `bodyIncludes`, e.g. to refuse one construct wherever it appears).
   */
  bodyIncludes?: string;
  /**
   * Only replies sent into a thread (`inThread`), as the emulator's `bodyIncludes: '"reply_in_thread":true'`
   * picks them out of the request body: a platform that refuses threads somewhere.
   */
  inThread?: true;
  /** Skip this many matching calls first: `{skip: 2, times: 1}` faults the 3rd matching call only. */
  skip?: number;
  /** How many matching calls it applies to (default 1; `Infinity` for a storm that lasts until cleared). */
  times?: number;
  response: FakeFaultResponse;
}

export interface FakeFaultHandle {
  /** Matching calls this fault will still affect. */
  readonly remaining: number;
  cancel(): void;
}

interface Active {
  fault: FakeFault;
  skip: number;
  remaining: number;
}

/**
 * Faults consumed in the order they were added, first match wins (as the emulator's FaultQueue). A call
 * that a fault skips is still counted against that fault, so `skip` means "the Nth matching call".
 */
export class FakeFaultQueue {
  #faults: Active[] = [];

  add(fault: FakeFault): FakeFaultHandle {
    const times = fault.times ?? 1;
    if (!(times >= 1)) throw new Error("fault.times must be at least 1");
    const skip = fault.skip ?? 0;
    if (!Number.isInteger(skip) || skip < 0) throw new Error("fault.skip must be a non-negative integer");
    const active: Active = { fault, skip, remaining: times };
    this.#faults.push(active);
    return {
      get remaining() {
        return active.remaining;
      },
      cancel: () => {
        active.remaining = 0;
        this.#prune();
      },
    };
  }

  take(
    method: MessengerMethod,
    messageId: string | undefined,
    content: string,
    inThread = false,
  ): FakeFaultResponse | undefined {
    for (const active of this.#faults) {
      if (active.remaining <= 0 || !matches(active.fault, method, messageId, content, inThread)) continue;
      if (active.skip > 0) {
        active.skip -= 1;
        continue;
      }
      active.remaining -= 1;
      this.#prune();
      return active.fault.response;
    }
    return undefined;
  }

  clear(): void {
    for (const active of this.#faults) active.remaining = 0;
    this.#faults = [];
  }

  #prune(): void {
    this.#faults = this.#faults.filter((active) => active.remaining > 0);
  }
}

function matches(
  fault: FakeFault,
  method: MessengerMethod,
  messageId: string | undefined,
  content: string,
  inThread: boolean,
): boolean {
  if (fault.bodyIncludes !== undefined && !content.includes(fault.bodyIncludes)) return false;
  if (fault.inThread && !inThread) return false;
  if (fault.method !== undefined) {
    const methods: readonly MessengerMethod[] =
      typeof fault.method === "string" ? [fault.method] : fault.method;
    if (!methods.includes(method)) return false;
  }
  return fault.messageId === undefined || fault.messageId === messageId;
}

/** An injected fault as the SDK messenger reports it (toFeishuError in lark-messenger.ts). */
export function faultError(
  api: string,
  fault: { code?: number; httpStatus?: number; resetSeconds?: number; msg?: string },
): FeishuApiError {
  const httpStatus = fault.httpStatus ?? 400;
  // The emulator answers a fault without a code with a text body, which the SDK messenger reports by status.
  const message = fault.code === undefined ? `HTTP ${httpStatus}` : (fault.msg ?? "injected fault");
  return new FeishuApiError({
    method: api,
    message,
    httpStatus,
    ...(fault.code !== undefined ? { feishuCode: fault.code } : {}),
    ...(fault.resetSeconds !== undefined && fault.resetSeconds > 0
      ? { retryAfterMs: fault.resetSeconds * 1000 }
      : {}),
  });
}

/** The emulator's own errors (state, content checks) travel as HTTP errors carrying `{code, msg}`. */
export function toApiError(api: string, error: unknown): FeishuApiError {
  if (error instanceof FeishuApiError) return error;
  if (error instanceof FeishuError)
    return new FeishuApiError({
      method: api,
      message: error.message,
      feishuCode: error.code,
      httpStatus: error.httpStatus,
    });
  throw error;
}
