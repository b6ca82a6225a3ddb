import type { SessionTopic } from "../domain/types.ts";
import { strings } from "../strings/index.ts";
import type { Limiter } from "./limits.ts";
import { FEISHU_CODES, FeishuApiError, type FeishuMessenger } from "./messenger.ts";
import { threadReply } from "./topics.ts";

/**
 * A progress card that is gone for good — recalled (230011), deleted (230110), or unknown to the platform
 * (230001 for an id the platform itself gave us) — leaves its run with no surface: nobody sees its progress,
 * can answer its questions or press 取消任务, and the chat's next message would queue behind it until the
 * ask times out (15 min). The channel then ends the run and says so in the chat; this module decides
 * "gone" so that a one-off error never ends a run that is in fact still visible.
 */

export interface GoneCheckDeps {
  messenger: Pick<FeishuMessenger, "messageStatus" | "sendText">;
  appLimiter: Limiter;
}

/** The PATCH error alone proves the card is gone (230001 may be any invalid parameter, so it does not). */
export function provesGone(error: unknown): boolean {
  return error instanceof FeishuApiError && error.messageRemoved;
}

/** The error might mean the card is gone: worth asking the platform about the message itself. */
export function suggestsGone(error: unknown): boolean {
  return (
    provesGone(error) || (error instanceof FeishuApiError && error.feishuCode === FEISHU_CODES.invalidParam)
  );
}

/**
 * Asks the platform whether the message is still there. `gone` only on a definite answer: the message is
 * marked deleted, or the lookup itself fails with recalled/deleted/unknown id. Anything else (a timeout, a
 * 5xx, a rate limit, a missing permission: reading a group's messages needs `im:message.group_msg`) is no
 * proof, so the card counts as present and `error` says why the lookup failed.
 */
export async function checkCard(
  deps: GoneCheckDeps,
  messageId: string,
): Promise<{ gone: boolean; error?: FeishuApiError }> {
  try {
    const status = await deps.appLimiter(() => deps.messenger.messageStatus(messageId));
    return { gone: status.deleted };
  } catch (error) {
    if (suggestsGone(error)) return { gone: true };
    if (error instanceof FeishuApiError) return { gone: false, error };
    throw error;
  }
}

/**
 * The new reply that says the task stopped: to the message that started it. When that message is gone too
 * (or unknown, after a restart against a Feishu that never saw it), a plain session says it in the chat
 * itself; a topic says it inside the topic, replying to its root message, and says nothing if that is gone as
 * well: a message sent to the chat would land in the group's main flow, or open a new topic in a topic group.
 * Returns whether the notice was sent.
 */
export async function tellChatCardGone(
  deps: GoneCheckDeps,
  where: { chatId: string; sourceMessageId: string; topic?: SessionTopic | undefined },
): Promise<boolean> {
  const send = (replyTo?: string) =>
    deps.appLimiter(() =>
      deps.messenger.sendText(
        { chatId: where.chatId },
        strings.feishu.cardGone,
        replyTo ? { replyTo, ...threadReply(where) } : {},
      ),
    );
  const places: (string | undefined)[] = where.topic
    ? [...new Set([where.sourceMessageId, where.topic.rootMessageId].filter((id) => id !== ""))]
    : [where.sourceMessageId || undefined, undefined];
  for (const [i, replyTo] of places.entries()) {
    try {
      await send(replyTo);
      return true;
    } catch (error) {
      // Only "that message is gone" moves on to the next place; anything else is the caller's to log.
      if (!suggestsGone(error)) throw error;
      if (i === places.length - 1) {
        if (where.topic) return false;
        throw error;
      }
    }
  }
  return false;
}
