import type { Logger } from "../logger.ts";
import { FeishuApiError, type FeishuMessenger } from "./messenger.ts";

/**
 * What the channel does when the platform refuses a reply into a thread: the same reply once more, in the
 * chat's main flow, since a card there beats no card. Only the refusals the reply page lists for
 * `reply_in_thread` count (feishu-platform §5.1); any other error is not about the thread, and retrying it
 * without the thread would only put a new thread's card in the main flow.
 *
 * This is the one owner of that policy. Messengers (the SDK's, the fake) only send what they are asked and
 * report a refusal as the FeishuApiError it is; the channel wraps whichever it is given (channel.ts), so a
 * scenario on the fake falls back exactly as production does over the SDK.
 */
export function withThreadFallback(messenger: FeishuMessenger, log: Logger): FeishuMessenger {
  const once = async <T>(messageId: string, send: (inThread: boolean) => Promise<T>): Promise<T> => {
    try {
      return await send(true);
    } catch (error) {
      if (!threadRefused(error)) throw error;
      log.warn(
        { messageId, code: error.feishuCode },
        "reply_in_thread refused; replying in the chat instead",
      );
      return send(false);
    }
  };
  return {
    replyCard: (messageId, card, options) => {
      if (!options?.inThread) return messenger.replyCard(messageId, card, options);
      const { inThread: _inThread, ...plain } = options;
      return once(messageId, (inThread) => messenger.replyCard(messageId, card, inThread ? options : plain));
    },
    sendText: (target, text, options) => {
      const replyTo = options?.replyTo;
      if (!options?.inThread || replyTo === undefined) return messenger.sendText(target, text, options);
      const { inThread: _inThread, ...plain } = options;
      return once(replyTo, (inThread) => messenger.sendText(target, text, inThread ? options : plain));
    },
    sendCard: (target, card, options) => messenger.sendCard(target, card, options),
    patchCard: (messageId, card) => messenger.patchCard(messageId, card),
    userName: (openId) => messenger.userName(openId),
    editText: (messageId, text, options) => messenger.editText(messageId, text, options),
    recall: (messageId) => messenger.recall(messageId),
    messageStatus: (messageId) => messenger.messageStatus(messageId),
    botInfo: () => messenger.botInfo(),
  };
}

/** The reply page's codes for a refused `reply_in_thread` (feishu-platform §5.1): 230071 the group takes no
 * threads, 230072 an aggregated message. */
const THREAD_REFUSED = new Set([230071, 230072]);

export function threadRefused(error: unknown): error is FeishuApiError {
  return (
    error instanceof FeishuApiError && error.feishuCode !== undefined && THREAD_REFUSED.has(error.feishuCode)
  );
}
