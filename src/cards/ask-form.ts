import type { ElicitationAsk } from "../asks/elicitation.ts";
import { firstQuestionIndexes } from "../asks/question-numbers.ts";
import type { AskQuestion } from "../asks/schema.ts";
import type { Strings } from "../strings/index.ts";
import { oneLine, truncate } from "../util/text.ts";
import type { AskSubmitValue } from "./actions.ts";
import { type AskContext, askHeading, type Budget } from "./ask-context.ts";
import { elicitForm } from "./elicit-form.ts";
import { formFields, writeStack } from "./form-fields.ts";
import type { FormDraft } from "./form-value.ts";
import { escapeText, previewBlock, safeUrl } from "./markdown.ts";
import type { CardNode, FormNode } from "./model.ts";

/**
 * One pending ask as a form on the progress card, and the compact block for asks that do not fit. Pure.
 * Every model-written field here sits inside lines we format (bold header, option list), so each is
 * shown as text (escapeText); only a preview stays markdown, sanitized.
 */

export interface CardAsk {
  requestId: string;
  questions: readonly AskQuestion[];
  /** What the person last submitted for this ask without completing it: rendered pre-filled. */
  draft?: FormDraft;
  /** Why an outside agent asks (agents-api): shown under the form's heading. */
  reason?: string;
  /** The second kind of ask: an MCP server's form (then `questions` is empty). */
  elicitation?: ElicitationAsk;
  /** An outside agent's question: 拒绝回答 sits beside 提交 (asks/person-actions.ts). */
  declinable?: true;
}

/** The names of question `questionIndex` of form `askIndex` and of its form (form-fields.ts owns them). */
export function fieldNames(askIndex: number, questionIndex: number) {
  return {
    form: formFields.form(askIndex),
    choice: formFields.choice(askIndex, questionIndex),
    custom: formFields.custom(askIndex, questionIndex),
    submit: formFields.button(askIndex, "submit"),
  };
}

/**
 * The forms of the asks shown in full. Two or more question asks share **one** form with one submit: a submit
 * sends only its own form's fields (feishu-platform §6.5), and the card that answers it re-renders every
 * form, so with a form per ask whatever was typed into the others was lost. In one form, everything typed
 * is sent together: complete asks are answered, the rest come back pre-filled. An MCP server's form keeps its
 * own (its 拒绝 / 取消 answer only it).
 */
export function askForms(asks: readonly CardAsk[], total: number, c: AskContext): FormNode[] {
  const firsts = firstQuestionIndexes(asks);
  const questionAsks = asks.flatMap((ask, askIndex) => (ask.elicitation ? [] : [{ ask, askIndex }]));
  if (questionAsks.length < 2) return asks.map((ask, i) => askForm(ask, i, total, c, firsts[i]));
  const stacked: CardNode[] = [];
  for (const [k, { ask, askIndex }] of questionAsks.entries()) {
    if (k > 0) stacked.push({ tag: "hr" });
    // Its own form's elements without its submit button (the last one): the stack has one for all.
    stacked.push(...askForm(ask, askIndex, total, c, firsts[askIndex]).elements.slice(0, -1));
  }
  const first = questionAsks[0]?.ask.requestId ?? "";
  const value: AskSubmitValue = {
    kind: "feishu_ask",
    act: "submit",
    sessionId: c.sessionId,
    requestId: first,
    sender: c.senderId,
    stack: writeStack(questionAsks.map(({ ask, askIndex }) => ({ askIndex, requestId: ask.requestId }))),
  };
  stacked.push({
    tag: "button",
    name: formFields.stackSubmit,
    text: { tag: "plain_text", content: c.strings.card.submitAll },
    type: "primary_filled",
    form_action_type: "submit",
    behaviors: [{ type: "callback", value }],
  });
  const forms: FormNode[] = [];
  let placed = false;
  for (const [i, ask] of asks.entries()) {
    if (ask.elicitation) forms.push(askForm(ask, i, total, c));
    else if (!placed) {
      forms.push({ tag: "form", name: formFields.stack, elements: stacked });
      placed = true;
    }
  }
  return forms;
}

/** `firstIndex`: the card-wide index of its first question (asks/question-numbers.ts), shown when `c.numbered`. */
export function askForm(ask: CardAsk, index: number, total: number, c: AskContext, firstIndex = 0): FormNode {
  if (ask.elicitation)
    return elicitForm({ requestId: ask.requestId, elicitation: ask.elicitation }, index, total, c);
  const { budget, strings: s } = c;
  const elements: CardNode[] = [];
  ask.questions.forEach((question, j) => {
    const names = fieldNames(index, j);
    const draft = ask.draft?.[j];
    const reason =
      j === 0 && ask.reason ? `${s.agents.askReason(escapeText(truncate(oneLine(ask.reason), 300)))}\n` : "";
    const heading = j === 0 ? `${askHeading(c, index + 1, total)}\n${reason}\n` : "";
    const number = c.numbered ? firstIndex + j + 1 : undefined;
    elements.push({ tag: "markdown", content: heading + questionMarkdown(question, budget, s, number) });
    const previews = question.multiSelect ? [] : question.options.filter((option) => option.preview);
    // Feishu has no side-by-side layout: each preview goes under the question, folded. Single-select only.
    if (budget.previews && previews.length > 0) {
      const content = previews
        .map(
          (option) =>
            `**${escapeText(option.label)}**\n${previewBlock(option.preview ?? "", { imageText: s.card.image })}`,
        )
        .join("\n\n");
      elements.push({
        tag: "collapsible_panel",
        expanded: false,
        header: {
          title: { tag: "markdown", content: `${s.card.previewTitle} · ${escapeText(question.header)}` },
        },
        elements: [{ tag: "markdown", content }],
      });
    }
    const options = question.options.map((option, k) => ({
      text: {
        tag: "plain_text" as const,
        content: truncate(oneLine(option.label) || `${k + 1}`, budget.optionTextChars),
      },
      // Index strings, not labels: labels may hold characters a value should not (seed §4.2).
      value: String(k),
    }));
    const chosen = (draft?.choices ?? []).filter((k) => k < options.length);
    elements.push(
      question.multiSelect
        ? {
            tag: "multi_select_static",
            name: names.choice,
            required: false,
            placeholder: { tag: "plain_text", content: s.card.multiSelectPlaceholder },
            width: "fill",
            selected_values: chosen.map(String),
            options,
          }
        : {
            tag: "select_static",
            name: names.choice,
            required: false,
            placeholder: { tag: "plain_text", content: s.card.selectPlaceholder },
            width: "fill",
            // initial_index (1-based), not initial_option: whether initial_option names an option's value or
            // its text is undocumented (feishu-platform §1.2 select_static).
            ...(chosen[0] !== undefined ? { initial_index: chosen[0] + 1 } : {}),
            options,
          },
    );
    elements.push({
      tag: "input",
      name: names.custom,
      required: false,
      placeholder: { tag: "plain_text", content: s.card.otherPlaceholder },
      max_length: 1000,
      width: "fill",
      ...(draft?.custom ? { default_value: draft.custom } : {}),
    });
  });
  const value: AskSubmitValue = {
    kind: "feishu_ask",
    act: "submit",
    sessionId: c.sessionId,
    requestId: ask.requestId,
    sender: c.senderId,
  };
  // Before 提交, which stacked forms drop (askForms keeps each ask's 拒绝回答 in the one form). A button
  // inside a form must submit it (feishu-platform: form_action_type); the callback's act says which.
  if (ask.declinable)
    elements.push({
      tag: "button",
      name: formFields.button(index, "decline"),
      text: { tag: "plain_text", content: s.card.declineAsk },
      type: "default",
      form_action_type: "submit",
      behaviors: [{ type: "callback", value: { ...value, act: "decline" } }],
    });
  elements.push({
    tag: "button",
    name: fieldNames(index, 0).submit,
    text: { tag: "plain_text", content: s.card.submit },
    type: "primary_filled",
    form_action_type: "submit",
    behaviors: [{ type: "callback", value }],
  });
  return { tag: "form", name: fieldNames(index, 0).form, elements };
}

function questionMarkdown(question: AskQuestion, budget: Budget, s: Strings, number?: number): string {
  const header = escapeText(question.header);
  const text = escapeText(truncate(oneLine(question.question), budget.questionChars));
  const head =
    number === undefined
      ? s.card.questionLine(header, text)
      : s.card.numberedQuestionLine(number, header, text);
  if (budget.optionList === "none") return head;
  const lines = question.options.map((option) => {
    const label = `- **${escapeText(option.label)}**`;
    if (budget.optionList === "labels" || !option.description) return label;
    return `${label}${s.card.optionDescriptionSeparator}${escapeText(truncate(oneLine(option.description), budget.descriptionChars))}`;
  });
  return [head, ...lines].join("\n");
}

/**
 * Asks past the card's component budget: one markdown block naming them, with the session page (where they
 * can be answered) when there is one. Each reaches its form here once an earlier one is answered.
 */
export function compactAsks(asks: readonly CardAsk[], detailsUrl: string | undefined, s: Strings): CardNode {
  // An MCP server's form counts as one question, named by its server.
  const questions = asks.flatMap((ask): { header: string }[] =>
    ask.elicitation ? [{ header: ask.elicitation.server }] : [...ask.questions],
  );
  const shown = questions
    .slice(0, 8)
    .map((question) => s.card.quotedHeader(escapeText(oneLine(question.header))));
  const headers = shown.join(s.card.quotedHeaderSeparator) + (questions.length > shown.length ? "…" : "");
  const url = detailsUrl ? safeUrl(detailsUrl) : undefined;
  return {
    tag: "markdown",
    content: `${s.card.moreAsks(questions.length)} ${headers}\n${url ? s.card.moreAsksLink(url) : s.card.moreAsksLater}`,
  };
}
