import { z } from "zod";
import { answerSchema, askInputSchema } from "../asks/schema.ts";

/**
 * The inputs and results of the agent tools, one set of zod schemas for MCP (their JSON Schema is what
 * models see) and for the HTTP API's bodies. The question rules themselves stay in asks/schema.ts.
 */

const OPEN_ID = /^ou_[A-Za-z0-9_-]{1,64}$/;
const CHAT_ID = /^oc_[A-Za-z0-9_-]{1,64}$/;

export const MAX_WAIT_S = 300;
export const DEFAULT_WAIT_S = 50;
export const MAX_TIMEOUT_S = 7 * 24 * 60 * 60;

const target = z
  .string()
  .refine((id) => OPEN_ID.test(id) || CHAT_ID.test(id), "must be an open_id (ou_…) or a group chat id (oc_…)")
  .describe("Who sees the card: a person's open_id (ou_…, private chat) or a group chat id (oc_…)");
const taskId = z.string().min(1).max(100).describe("The task_id start_task returned");
const askId = z.string().min(1).max(100).describe("The ask_id ask_user_questions returned");
const waitS = z
  .number()
  .min(0)
  .max(MAX_WAIT_S, `wait_s must be at most ${MAX_WAIT_S}`)
  .optional()
  .describe(`Seconds to wait for the answer in this call (default ${DEFAULT_WAIT_S}, at most ${MAX_WAIT_S})`);

export const startTaskInput = z.strictObject({
  to: target,
  title: z.string().trim().min(1).max(200).describe("What you are working on, shown as the card's title"),
});

export const reportProgressInput = z.strictObject({
  task_id: taskId,
  step: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .describe("The step, e.g. 'Run the tests'; the same text updates it"),
  status: z.enum(["running", "done", "failed"]).optional().describe("Default running"),
  detail: z.string().max(500).optional().describe("A short note shown next to the step"),
});

export const askUserQuestionsInput = z.strictObject({
  questions: askInputSchema.shape.questions,
  metadata: askInputSchema.shape.metadata,
  to: target.optional().describe("Where to ask when there is no task_id: a new question card there"),
  task_id: taskId.optional().describe("Ask on this task's progress card"),
  answerer: z
    .string()
    .regex(OPEN_ID, "answerer must be an open_id (ou_…)")
    .optional()
    .describe("In a group: the open_id of the only person who may answer (required there)"),
  reason: z.string().trim().min(1).max(300).optional().describe("Why you ask; shown on the card"),
  timeout_s: z
    .number()
    .int()
    .min(10)
    .max(MAX_TIMEOUT_S)
    .optional()
    .describe("How long the question stays open (default: the bot's ASK_TIMEOUT_MS)"),
  wait_s: waitS,
});

export const getAnswersInput = z.strictObject({ ask_id: askId, wait_s: waitS });
export const cancelQuestionInput = z.strictObject({ ask_id: askId });
export const finishTaskInput = z.strictObject({
  task_id: taskId,
  status: z.enum(["completed", "failed", "cancelled"]),
  text: z.string().max(6000).optional().describe("The result (markdown) or, when failed, what went wrong"),
});

export const askResultSchema = z.strictObject({
  status: z.enum(["answered", "pending", "timeout", "cancelled", "declined"]),
  ask_id: z.string(),
  answers: z.array(answerSchema).optional(),
  answered_by: z.string().optional(),
  answered_via: z.string().optional(),
  /** Only when declined: who pressed 拒绝回答, and where (feishu: the card; websocket: the session page). */
  declined_by: z.string().optional(),
  declined_via: z.string().optional(),
  /** Only while pending or once declined: what the agent should do next. */
  hint: z.string().optional(),
});

export const taskResultSchema = z.strictObject({ task_id: z.string() });
export const stepResultSchema = z.strictObject({ task_id: z.string(), steps: z.number().int() });
export const finishResultSchema = z.strictObject({ task_id: z.string(), status: z.string() });

export type StartTaskInput = z.infer<typeof startTaskInput>;
export type ReportProgressInput = z.infer<typeof reportProgressInput>;
export type AskUserQuestionsInput = z.infer<typeof askUserQuestionsInput>;
export type FinishTaskInput = z.infer<typeof finishTaskInput>;
export type AskResult = z.infer<typeof askResultSchema>;
export type StepResult = z.infer<typeof stepResultSchema>;
export type FinishResult = z.infer<typeof finishResultSchema>;

/** A declined result's hint: the person chose not to answer, which is an answer to respect, not a fault. */
export const DECLINED_HINT =
  "The person declined to answer this question. Do not ask it again; go on without it, or finish the task " +
  "and say what you could not do without an answer.";

/**
 * A pending result's hint, naming the id: the model may have been cut off from the call that asked (its
 * client's timeout), and this line is what tells it how to get the answer later.
 */
export const pendingHint = (askId: string): string =>
  `Not answered yet. Call get_answers with ask_id "${askId}" to keep waiting (the answer is kept for you ` +
  "whenever it comes); the question stays open until its timeout. Do not ask it again.";
