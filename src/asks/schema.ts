import { z } from "zod";
import { MAX_CUSTOM_INPUT_CHARS } from "./answer-rule.ts";
import { skeleton } from "./confusables.ts";
import { findInvisible, findStrayVariationSelector } from "./invisible.ts";

/**
 * The `ask_user_questions` tool: its input and output, with the seed's limits
 * (ask-user-questions-design §3.1) plus uniqueness rules a form needs to map answers back.
 * Pure: no I/O imports (test/boundary.test.ts keeps it so).
 */

export const ASK_TOOL_NAME = "ask_user_questions";

export const LIMITS = {
  minQuestions: 1,
  maxQuestions: 4,
  maxHeaderChars: 12,
  minOptions: 2,
  maxOptions: 4,
  maxQuestionChars: 500,
  maxLabelChars: 60,
  maxDescriptionChars: 500,
  maxPreviewChars: 4000,
  maxCustomInputChars: MAX_CUSTOM_INPUT_CHARS,
  /** Metadata is the caller's tracking data, echoed to clients and kept in the ask row: a few levels suffice. */
  maxMetadataDepth: 8,
  maxMetadataChars: 16_384,
} as const;

/**
 * Why `metadata` is too deep or too large to keep, or undefined. Walked with an explicit stack, never
 * recursion: 5,000 levels of `{"a":…}` used to overflow the stack of whatever serialised it first (a 500,
 * with the question card's task already recorded). Exact length only once the depth is known to be small.
 */
export function metadataProblem(value: unknown): string | undefined {
  const max = LIMITS.maxMetadataDepth;
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  // Every node costs at least one character of JSON, so more nodes than characters is already too large.
  for (let seen = 0; stack.length > 0; seen += 1) {
    if (seen > LIMITS.maxMetadataChars)
      return `metadata must be at most ${LIMITS.maxMetadataChars} characters as JSON`;
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (typeof node !== "object" || node === null) continue;
    if (depth > max) return `metadata must be at most ${max} levels deep`;
    for (const child of Object.values(node)) stack.push({ node: child, depth: depth + 1 });
  }
  const chars = JSON.stringify(value)?.length ?? 0;
  if (chars > LIMITS.maxMetadataChars)
    return `metadata must be at most ${LIMITS.maxMetadataChars} characters as JSON (it has ${chars})`;
  return undefined;
}

/**
 * Text a person reads on the form: NFC-normalized before any check (so "é" typed two ways is one label,
 * and lengths count what is shown), then free of invisible and bidi control characters (asks/invisible.ts),
 * which would make two options look alike or reverse what a label says.
 */
const visible = <T extends z.ZodString>(what: string, schema: T) =>
  schema.superRefine((value, ctx) => {
    const found = findInvisible(value);
    if (found) {
      ctx.addIssue({
        code: "custom",
        message: `${what} contains an invisible or bidirectional control character (${found}); remove it`,
      });
    }
  });

const text = (what: string, max: number) =>
  visible(
    what,
    z
      .string({ error: `${what} must be a string` })
      .trim()
      .normalize("NFC")
      .min(1, `${what} must not be empty`)
      .max(max, `${what} must be at most ${max} characters`),
  );

export const optionSchema = z.strictObject({
  label: text("label", LIMITS.maxLabelChars).describe("Display text, 1-5 words"),
  description: text("description", LIMITS.maxDescriptionChars).describe(
    "Explanation of what this option means",
  ),
  preview: visible(
    "preview",
    z
      .string({ error: "preview must be a string" })
      .normalize("NFC")
      .max(LIMITS.maxPreviewChars, `preview must be at most ${LIMITS.maxPreviewChars} characters`),
  )
    .optional()
    .describe("Optional preview content (mockups, code, diagrams)"),
});

export const questionSchema = z
  .strictObject({
    question: text("question", LIMITS.maxQuestionChars).describe("The complete question, ending with ?"),
    header: text("header", LIMITS.maxHeaderChars).describe("Very short label, shown as chip/tag"),
    options: z
      .array(optionSchema, { error: "options must be an array" })
      .min(LIMITS.minOptions, `options must have at least ${LIMITS.minOptions} items`)
      .max(LIMITS.maxOptions, `options must have at most ${LIMITS.maxOptions} items`),
    multiSelect: z
      .boolean({ error: "multiSelect is required and must be true or false" })
      .describe("true = multiple answers allowed"),
  })
  .superRefine((question, ctx) => {
    const seen = new Set<string>();
    question.options.forEach((option, index) => {
      if (seen.has(option.label)) {
        ctx.addIssue({
          code: "custom",
          path: ["options", index, "label"],
          message: `option labels must be unique within a question ("${option.label}" appears twice)`,
        });
      }
      seen.add(option.label);
    });
  });

/**
 * Rules for what an asker sends, not for rows already kept (store/asks.ts parses those with
 * `questionSchema`, and a row from an older version must still load): no variation selector outside an
 * emoji, and no two labels of a question — nor two questions of a call — with the same confusable skeleton
 * (asks/confusables.ts), so `prod` beside `prod`+U+FE0F or a Cyrillic `рrod` cannot be offered as two choices.
 */
function lookAlikes(questions: readonly AskQuestion[], ctx: z.RefinementCtx): void {
  const issue = (path: (string | number)[], message: string) =>
    ctx.addIssue({ code: "custom", path, message });
  const texts = new Map<string, string>();
  questions.forEach((question, i) => {
    const fields: [(string | number)[], string, string | undefined][] = [
      [[i, "question"], "question", question.question],
      [[i, "header"], "header", question.header],
    ];
    question.options.forEach((option, j) => {
      fields.push([[i, "options", j, "label"], "label", option.label]);
      fields.push([[i, "options", j, "description"], "description", option.description]);
      fields.push([[i, "options", j, "preview"], "preview", option.preview]);
    });
    for (const [path, what, value] of fields) {
      const found = value === undefined ? undefined : findStrayVariationSelector(value);
      if (found) issue(path, `${what} contains a variation selector outside an emoji (${found}); remove it`);
    }
    const other = texts.get(skeleton(question.question));
    if (other !== undefined && other !== question.question)
      issue(
        [i, "question"],
        `question texts must not look alike within one call ("${question.question}" looks like "${other}")`,
      );
    texts.set(skeleton(question.question), question.question);
    const labels = new Map<string, string>();
    question.options.forEach((option, j) => {
      const key = skeleton(option.label);
      const seen = labels.get(key);
      if (seen !== undefined && seen !== option.label)
        issue(
          [i, "options", j, "label"],
          `option labels must not look alike within a question ("${option.label}" looks like "${seen}")`,
        );
      labels.set(key, option.label);
    });
  });
}

export const askInputSchema = z
  .strictObject({
    questions: z
      .array(questionSchema, { error: "questions must be an array" })
      .min(LIMITS.minQuestions, `questions must have at least ${LIMITS.minQuestions} item`)
      .max(LIMITS.maxQuestions, `questions must have at most ${LIMITS.maxQuestions} items`)
      .superRefine(lookAlikes),
    metadata: z
      .record(z.string(), z.unknown(), { error: "metadata must be an object" })
      .superRefine((value, ctx) => {
        const problem = metadataProblem(value);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .optional()
      .describe(
        `Optional tracking metadata, echoed back; at most ${LIMITS.maxMetadataDepth} levels deep and ${LIMITS.maxMetadataChars} characters as JSON`,
      ),
  })
  .superRefine((input, ctx) => {
    const seen = new Set<string>();
    input.questions.forEach((question, index) => {
      if (seen.has(question.question)) {
        ctx.addIssue({
          code: "custom",
          path: ["questions", index, "question"],
          message: "question texts must be unique within one call",
        });
      }
      seen.add(question.question);
    });
  });

export type AskOption = z.infer<typeof optionSchema>;
export type AskQuestion = z.infer<typeof questionSchema>;
export type AskInput = z.infer<typeof askInputSchema>;

export const answerSchema = z.strictObject({
  question: z.string(),
  selectedLabels: z.array(z.string()),
  customInput: z.string().nullable(),
});

export const askOutputSchema = z.strictObject({ answers: z.array(answerSchema) });

export type AskAnswer = z.infer<typeof answerSchema>;
export type AskOutput = z.infer<typeof askOutputSchema>;

export const ASK_TOOL_DESCRIPTION = [
  "Use this tool when you need to ask the user questions during execution. This allows you to gather user",
  "preferences or requirements, clarify ambiguous instructions, get decisions on implementation choices as you",
  "work, or offer choices to the user about what direction to take.",
  "",
  "Usage notes:",
  '- Users will always be able to select "Other" to provide custom text input',
  "- Use multiSelect: true to allow multiple answers to be selected",
  '- If you recommend a specific option, make it the first in the list and add "(Recommended)" at the end of the label',
  "- preview supports rendered markdown in a monospace box, multi-line with newlines",
  "- Previews only render for single-select questions (not multiSelect)",
  "- When any option has preview, UI switches to side-by-side layout",
  "- Ask 1-4 questions per call; each header at most 12 characters; 2-4 options per question;",
  "  question texts unique within a call and option labels unique within a question",
].join("\n");

/** Parse tool arguments (a JSON string or an already-parsed value) into a valid ask, or say what is wrong. */
export function parseAskInput(
  raw: unknown,
): { ok: true; value: AskInput } | { ok: false; error: string; problem: string } {
  let value: unknown = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return invalid("not valid JSON");
    }
  }
  const parsed = askInputSchema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return invalid(formatIssues(parsed.error.issues));
}

/** `error` is what the model reads; `problem` alone is what the step's summary shows (summary.ts). */
function invalid(problem: string): { ok: false; error: string; problem: string } {
  return { ok: false, error: `Invalid arguments: ${problem}`, problem };
}

/** "questions.0.header: header must be at most 12 characters; ..." — names the field the model must fix. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = issue.path.map(String).join(".");
      const message =
        issue.code === "unrecognized_keys" ? `unknown field(s) ${issue.keys.join(", ")}` : issue.message;
      return path ? `${path}: ${message}` : message;
    })
    .join("; ");
}

/** JSON Schema handed to a model that calls tools. */
export function askToolJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(askInputSchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
}
