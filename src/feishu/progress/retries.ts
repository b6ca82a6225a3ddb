import { FeishuApiError } from "../messenger.ts";

/** A timer-based pause: the default between reply attempts (a fake clock in tests drives it as well). */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A task without its card cannot show progress or ask anything: a rate-limited or failed reply is retried a
 * few times (honouring Feishu's reset header) before the task is given up as unreachable.
 */
export async function withRetries<T>(
  send: () => Promise<T>,
  /** A refusal of the content (230099/230025, or the tenant's audit, 230028): re-render it, if there is a rung left. */
  degrade: (error: FeishuApiError) => boolean,
  wait: (ms: number) => Promise<void>,
  attempts = 4,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      // Not counted as an attempt: at most two re-renders per ladder, each plainer, then the refusal is final.
      if (error instanceof FeishuApiError && (error.cardRefused || error.auditRefused) && degrade(error)) {
        attempt -= 1;
        continue;
      }
      const retryable = error instanceof FeishuApiError && (error.rateLimited || error.transient);
      if (!retryable || attempt >= attempts) throw error;
      await wait(error.retryAfterMs ?? 500 * 2 ** (attempt - 1));
    }
  }
}
