import type { Logger } from "../logger.ts";
import { FeishuApiError, type FeishuMessenger } from "./messenger.ts";

/**
 * What the channel does when the platform refuses a reply into a thread: the same reply once more, in the
 * chat's main flow, since a card there beats no card. Where threads are not allowed is not documented
 * (feishu-platform §5.1), so any business refusal that is not about something else counts.
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
    recall: (messageId) => messenger.recall(messageId),
    messageStatus: (messageId) => messenger.messageStatus(messageId),
    botInfo: () => messenger.botInfo(),
  };
}

/**
 * A refusal that may be the thread itself: a Feishu business error (HTTP 4xx with a code) that is not about
 * the rate, the card's content, or a message that is gone — those fail the same way without the thread, and
 * the caller's own rules (back-off, degrading, gone) handle them.
 */
export function threadRefused(error: unknown): error is FeishuApiError {
  return (
    error instanceof FeishuApiError &&
    error.feishuCode !== undefined &&
    error.httpStatus !== undefined &&
    error.httpStatus < 500 &&
    !error.rateLimited &&
    !error.cardRefused &&
    !error.messageGone
  );
}
