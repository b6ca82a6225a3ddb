/**
 * How a card numbers its questions (issue 30): one count across every open question ask on the card, in the
 * order the card shows them, so `1:2 3:暗色模式` in a reply, the card's lines and the refusal
 * 第 3 题「…」 all mean the same question however many asks are stacked (parallel ask_user_questions calls, an
 * ask beside an ACP permission form). An MCP server's form (an elicitation) has fields, not questions: it takes
 * no number. The one owner of the rule: the card builder (cards/ask-form.ts), the reply (feishu/card-replies.ts)
 * and the stacked submit's toast (feishu/card-actions.ts) all read it here. Pure, imports nothing.
 */

interface NumberedAsk {
  questions: readonly unknown[];
  elicitation?: unknown;
}

/**
 * The card-wide index (from 0) of each ask's first question, in card order; undefined for an MCP server's
 * form. Question `j` of ask `k` is number `firsts[k] + j + 1` on the card.
 */
export function firstQuestionIndexes(asks: readonly NumberedAsk[]): (number | undefined)[] {
  let next = 0;
  return asks.map((ask) => {
    if (ask.elicitation) return undefined;
    const first = next;
    next += ask.questions.length;
    return first;
  });
}

/** How many questions the card numbers: a card of one question shows no number (a bare `2` picks option 2). */
export function numberedQuestionCount(asks: readonly NumberedAsk[]): number {
  return asks.reduce((sum, ask) => sum + (ask.elicitation ? 0 : ask.questions.length), 0);
}
