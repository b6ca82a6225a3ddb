import { FeishuApiError } from "../messenger.ts";

/** A timer-based pause: the default between reply attempts (a fake clock in tests drives it as well). */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A task without its card cannot show progress or ask anything: a rate-limited or failed reply is retried a
 * few times (honouring Feishu's reset header) before the task is given up as unreachable.
 */
export async function withRetries<T>(
  send: () => Promise<T>,
  degrade: () => boolean,
  wait: (ms: number) => Promise<void>,
  attempts = 4,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      // Not counted as an attempt: at most two re-renders, each plainer, then the refusal is final.
      if (error instanceof FeishuApiError && error.cardRefused && degrade()) {
        attempt -= 1;
        continue;
      }
      const retryable = error instanceof FeishuApiError && (error.rateLimited || error.transient);
      if (!retryable || attempt >= attempts) throw error;
      await wait(error.retryAfterMs ?? 500 * 2 ** (attempt - 1));
    }
  }
}
