/**
 * The @-mention reminder for a question on a progress card (DESIGN §9, peer-survey I1): a PATCH notifies
 * nobody, so a form that appears on a card in a busy group could go unseen. The policy, apart from the
 * channel that sends the message:
 *
 * - private chat: never. The card sits in a one-to-one chat, and the reply that created it already notified
 *   the sender; a second message there (and `/parallel` used to send two) is noise.
 * - group chat: once per card, however many asks the run opens, so `/parallel` mentions the sender once.
 * - never recalled afterwards: a recall leaves "撤回了一条消息" in everyone's chat, which is worse than the
 *   reminder itself; the reminder points at the card, whose form disappears once answered.
 *
 * Pure: the channel keeps `state` on its card and runs the effect.
 */

export type ReminderState = "none" | "sending" | "sent";

export interface ReminderInput {
  /** FEISHU_ASK_PING. */
  enabled: boolean;
  chatType: "private" | "group" | "none" | undefined;
  state: ReminderState;
}

/** Whether a new ask on this card should send the reminder now. */
export function shouldRemind(input: ReminderInput): boolean {
  return input.enabled && input.chatType === "group" && input.state === "none";
}

/**
 * The card's reminder state after a send attempt: a reminder that was skipped (the question was answered
 * while it waited for the rate budget) or failed leaves the card free to remind for its next ask.
 */
export function afterSend(outcome: "sent" | "skipped" | "failed"): ReminderState {
  return outcome === "sent" ? "sent" : "none";
}
