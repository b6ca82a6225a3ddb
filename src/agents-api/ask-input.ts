import { type AskInput, parseAskInput } from "../asks/schema.ts";
import { AppError } from "../errors.ts";
import type { AskUserQuestionsInput } from "./schemas.ts";

/**
 * An outside agent's ask_user_questions, checked before anything is shown (service.ts): its questions by the
 * shared rules, and whom it goes to and who may answer.
 */

/** The questions and metadata by the shared rules (unique texts and labels, limits), previews made plain. */
export function parsedAsk(input: AskUserQuestionsInput): AskInput {
  // The shared question rules from the one module that owns them.
  const parsed = parseAskInput({
    questions: input.questions,
    ...(input.metadata ? { metadata: input.metadata } : {}),
  });
  if (!parsed.ok) throw new AppError("INVALID_INPUT", parsed.error);
  const questions = parsed.value.questions.map((question) => ({
    ...question,
    // Option previews from outside agents are plain text: no fence of their own, so no markdown renders.
    options: question.options.map((option) =>
      option.preview === undefined ? option : { ...option, preview: option.preview.replaceAll("```", "'''") },
    ),
  }));
  return { ...parsed.value, questions };
}

/** Where the question goes (the task's card, or a new card for `to`) and who may answer it. */
export function askTarget(
  input: Pick<AskUserQuestionsInput, "to" | "answerer">,
  existing: { id: string; to: string } | undefined,
): { to: string; answerer: string } {
  if (existing && input.to !== undefined && input.to !== existing.to)
    throw new AppError(
      "INVALID_INPUT",
      `to: task ${existing.id} is shown to ${existing.to}, not ${input.to}`,
    );
  const to = existing?.to ?? input.to;
  if (to === undefined)
    throw new AppError("INVALID_INPUT", "give task_id (ask on its card) or to (a new card)");
  const group = to.startsWith("oc_");
  if (group && input.answerer === undefined)
    throw new AppError("INVALID_INPUT", "answerer: required in a group chat (the open_id who may answer)");
  if (!group && input.answerer !== undefined && input.answerer !== to)
    throw new AppError("INVALID_INPUT", "answerer: in a private chat only its person can answer");
  return { to, answerer: input.answerer ?? to };
}
