import type { CardAsk } from "./ask-form.ts";
import { maskContacts } from "./contacts.ts";
import type { ProgressView } from "./progress-view.ts";
import type { ProgressStepView } from "./steps.ts";

/**
 * The rungs a progress card climbs when the tenant's data-loss-prevention audit refuses it (230028), apart
 * from the 230099/230025 degrade levels (a card can be on both ladders): `masked` masks e-mail addresses and
 * phone numbers in everything a person or a model wrote (title, steps, the text, the error, the questions);
 * `withheld` also drops what the model and its tools wrote at length (the text, the error, step summaries,
 * option descriptions and previews) and the card points to the session page instead. Ids, links and the
 * bot's own words are never touched. Pure.
 */
export type Redaction = "none" | "masked" | "withheld";

export function redactView(view: ProgressView, redaction: Redaction): ProgressView {
  if (redaction === "none") return view;
  const drop = redaction === "withheld";
  const { text, error, errorWords, ...rest } = view;
  return {
    ...rest,
    title: maskContacts(view.title),
    steps: view.steps.map((step) => redactStep(step, drop)),
    ...(text !== undefined && !drop ? { text: maskContacts(text) } : {}),
    // Withheld, a failure keeps only the bot's own words for it (errorWords), else says nothing of why.
    ...(error !== undefined && !(drop && errorWords === undefined)
      ? { error: drop ? "" : maskContacts(error) }
      : {}),
    ...(errorWords !== undefined ? { errorWords } : {}),
  };
}

function redactStep(step: ProgressStepView, drop: boolean): ProgressStepView {
  const { summary, ...rest } = step;
  // The bot's words (等待你的回答) are kept: they render instead of title and summary where present.
  return {
    ...rest,
    title: maskContacts(step.title),
    ...(summary !== undefined && !drop ? { summary: maskContacts(summary) } : {}),
  };
}

/** The questions stay answerable: texts and labels are masked; withheld, descriptions and previews go. */
export function redactAsks(asks: readonly CardAsk[], redaction: Redaction): readonly CardAsk[] {
  if (redaction === "none") return asks;
  const drop = redaction === "withheld";
  return asks.map((ask) => ({
    ...ask,
    questions: ask.questions.map((question) => ({
      ...question,
      question: maskContacts(question.question),
      header: maskContacts(question.header),
      options: question.options.map((option) => {
        const { preview, ...kept } = option;
        return {
          ...kept,
          label: maskContacts(option.label),
          description: drop ? "" : maskContacts(option.description),
          ...(preview !== undefined && !drop ? { preview: maskContacts(preview) } : {}),
        };
      }),
    })),
    // What the person typed last shows pre-filled: masked like the rest (a submit sends what the form holds).
    ...(ask.draft ? { draft: ask.draft.map((d) => ({ ...d, custom: maskContacts(d.custom) })) } : {}),
    ...(ask.reason !== undefined ? { reason: maskContacts(ask.reason) } : {}),
    ...(ask.elicitation
      ? {
          elicitation: {
            ...ask.elicitation,
            message: drop ? "" : maskContacts(ask.elicitation.message),
            fields: ask.elicitation.fields.map((field) => maskFieldTexts(field)),
          },
        }
      : {}),
  }));
}

/** An MCP form field's texts (title, description, choice labels), whatever its kind. */
function maskFieldTexts<T>(field: T): T {
  if (typeof field !== "object" || field === null) return field;
  const out: Record<string, unknown> = { ...(field as Record<string, unknown>) };
  for (const key of ["title", "description", "label"]) {
    const value = out[key];
    if (typeof value === "string") out[key] = maskContacts(value);
  }
  return out as T;
}
