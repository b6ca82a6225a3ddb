import type { Strings } from "../strings/index.ts";

/**
 * What every form on a card is built with (the budget it may spend, whose answer it waits for) and the
 * heading each form opens with: shared by the question forms (ask-form.ts) and an MCP server's form
 * (elicit-form.ts), which are built side by side and never import each other.
 */

/** What the builder may spend; it starts generous and gives things up in a fixed order until the card fits. */
export interface Budget {
  steps: number;
  previews: boolean;
  descriptionChars: number;
  optionList: "full" | "labels" | "none";
  bodyChars: number;
  questionChars: number;
  optionTextChars: number;
}

export interface AskContext {
  sessionId: string;
  senderId: string;
  /** A group card is answered by its sender alone: its forms say whose answer they wait for. */
  chatType?: "group";
  budget: Budget;
  strings: Strings;
  /**
   * The card holds several questions: each is numbered across the card (asks/question-numbers.ts), the numbers
   * a reply's `1:2 2:暗色模式` and a refusal's 第 N 题 use.
   */
  numbered?: true;
}

/**
 * An open_id as Feishu issues them (`ou_` + hex); anything else is not put inside a tag. The builder writes
 * this `<at>` itself: text from users and models has its `<at>` escaped (markdown.ts), so only this one renders.
 */
const OPEN_ID = /^ou_[A-Za-z0-9_-]{1,64}$/;

/** The form's heading: 需要你的回答 in a private chat; in a group, the sender by name via `<at id=…></at>`. */
export function askHeading(c: AskContext, index: number, total: number): string {
  const s = c.strings;
  if (c.chatType !== "group") return s.card.askHeading(index, total);
  if (!OPEN_ID.test(c.senderId)) return s.card.askHeadingSender(index, total);
  return s.card.askHeadingGroup(`<at id=${c.senderId}></at>`, index, total);
}
