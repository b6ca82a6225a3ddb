import type { CardPlacement } from "../domain/run-feed.ts";

/**
 * Several Feishu apps in one process (issue 30): each app has its own channel, and a run belongs to the app
 * whose message started it. The run's source records the app (`appId`), its card placement carries it on
 * (harness/run-reads.ts placementOf), and only that app's channel sends and PATCHes the card, so a reply always
 * goes out with the token of the app that received the message, into that app's chat.
 *
 * A placement that names no app is the first app's: a run recorded by an earlier version (there was one app
 * then), or an outside agent's task (agents-api sends through the first app).
 */

/** Who a channel is: its app, and whether it is the first (which owns what names no app). */
export interface AppIdentity {
  appId: string;
  first: boolean;
}

/** What a Feishu message's run records as its source: where its card goes, and through which app. */
export function feishuSource(
  appId: string,
  messageId: string,
  chatId: string,
): { channel: "feishu"; appId: string; messageId: string; chatId: string } {
  return { channel: "feishu", appId, messageId, chatId };
}

/** Whether the channel of `app` shows this run's card. */
export function ownsPlacement(app: AppIdentity, placement: CardPlacement | undefined): boolean {
  if (placement === undefined) return false;
  return placement.appId === undefined ? app.first : placement.appId === app.appId;
}

/** An app's allow-list (config.ts AllowList): the sender is listed, or the message came from a listed group. */
export function allowedBy(
  allow: { users: readonly string[]; chats: readonly string[] } | undefined,
  message: { senderOpenId: string; chatId: string; chatType: string },
): boolean {
  if (allow === undefined) return true;
  if (allow.users.includes(message.senderOpenId)) return true;
  return message.chatType === "group" && allow.chats.includes(message.chatId);
}
