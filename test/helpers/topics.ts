import type { MessageView } from "../../src/local/emulator/index.ts";
import type { FeishuRig } from "./feishu.ts";

/** Shared by the topic tests (issue 19): who, where, and what the emulator holds. */

export const ALICE = "ou_alice000000000000000000000000000";
export const BOB = "ou_bob00000000000000000000000000000";
export const TOPICS = "oc_topic_group";
export const GROUP = "oc_normal_group";

export const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

export function message(r: FeishuRig, messageId: string): MessageView {
  const found = r.emulator.messages.getMessage(messageId);
  if (!found) throw new Error(`no message ${messageId}`);
  return found;
}

/** The bodies the bot sent to the reply endpoint for one message. */
export function replyBodies(r: FeishuRig, parentId: string): unknown[] {
  return r.emulator
    .callsTo("POST", `/open-apis/im/v1/messages/${parentId}/reply`)
    .map((call) => call.requestBody);
}

export async function completed(r: FeishuRig, cardId: string) {
  return r.until(() => {
    const card = r.cardOf(cardId);
    return isCompleted(card) && card;
  }, "the completed card");
}
