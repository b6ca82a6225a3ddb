import type { EmulatorContext } from "./context.ts";
import type { WebhookResult } from "./types.ts";
import { deliverWebhook } from "./webhook.ts";

/**
 * Where the app's events and callbacks go, as set in the developer console's 事件与回调 page: a request URL
 * (webhook) or the long connection. Everything that pushes to the bot (the console, tests, redeliveries)
 * goes through `deliver`, so the transport is a setting, not a second code path.
 */
export type Subscription = { mode: "webhook"; url: string | (() => string) } | { mode: "long_connection" };

export interface Deliverer {
  subscription(): Subscription | undefined;
  subscribe(subscription: Subscription): void;
  /**
   * Pushes an event or callback and resolves with the bot's answer: the HTTP response of a webhook, or the ack
   * of the long connection (`status` is its code, `body` its decoded data). Rejects with a `TimeoutError` when
   * no answer came within `timeoutMs`, and with another error when it could not be sent at all.
   */
  deliver(payload: unknown, options?: { timeoutMs?: number }): Promise<WebhookResult>;
}

export function createDeliverer(ctx: EmulatorContext): Deliverer {
  let current: Subscription | undefined;
  return {
    subscription: () => current,
    subscribe: (subscription) => {
      current = subscription;
    },
    async deliver(payload, options = {}) {
      if (!current)
        throw new Error("the app has no event subscription (subscribe to a webhook or the long connection)");
      if (current.mode === "long_connection") {
        const { status, body, durationMs } = await ctx.longConnection.deliveries.deliver(payload, options);
        return { status, body, durationMs };
      }
      const url = typeof current.url === "string" ? current.url : current.url();
      return deliverWebhook(url, payload, {
        encryptKey: ctx.config.encryptKey,
        now: ctx.clock.now(),
        ...options,
      });
    },
  };
}
