import { DEMO_QUESTIONS, DEMO_QUESTIONS_EN, demoQuestions } from "../../asks/demo-questions.ts";
import type { AskAnswer, AskInput } from "../../asks/schema.ts";
import { ASK_TOOL_NAME, askOutputSchema } from "../../asks/schema.ts";
import { escapeText } from "../../cards/markdown.ts";
import { bilingual, strings } from "../../strings/index.ts";
import { sleep } from "../../util/sleep.ts";
import type { ToolImpl } from "../dispatcher.ts";
import type { Agent, AgentContext, AgentResult } from "./agent.ts";

export { DEMO_QUESTIONS };

/**
 * The deterministic demo agent (DESIGN §11): the whole product can be watched without a model.
 * Commands in the text pick the script: /parallel, /fail, /long, /quick; anything else runs the default.
 */

export function createDemoTools(options: { stepMs: number }): ToolImpl[] {
  const step = (
    name: string,
    description: string,
    summarize: (args: Record<string, unknown>) => string,
  ): ToolImpl => ({
    definition: {
      name,
      description,
      parameters: { type: "object", properties: {}, additionalProperties: true },
    },
    async execute(args, ctx) {
      await sleep(options.stepMs, ctx.signal);
      const record = typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
      return JSON.stringify({ summary: summarize(record) });
    },
  });
  return [
    step("scan_workspace", "Look through the workspace (demo).", () => strings.demo.scanned(42)),
    step("apply_choice", "Apply one of the user's choices (demo).", (args) =>
      appliedSummary(String(args.kind ?? ""), String(args.choice ?? "")),
    ),
    step("process_chunk", "Process one chunk of work (demo).", (args) =>
      // A made-up but stable record count, so the long demo reads like work and golden output stays put.
      strings.demo.chunkDone(120 + (((Number(args.index) || 0) * 37) % 60)),
    ),
  ];
}

/** Files the demo pretends to write for each way of deploying, by the option's label in either language. */
const FILES = ["Dockerfile", "deployment.yaml", "app.service"];
const DEPLOY_FILES: Record<string, string> = Object.fromEntries(
  [DEMO_QUESTIONS, DEMO_QUESTIONS_EN].flatMap((set) =>
    set.deploy.options.map((option, i) => [option.label, FILES[i] ?? ""]),
  ),
);
const DEPLOY_QUESTIONS = new Set<string>([DEMO_QUESTIONS.deploy.question, DEMO_QUESTIONS_EN.deploy.question]);

function appliedSummary(kind: string, choice: string): string {
  if (kind === "deploy") return strings.demo.deployed(DEPLOY_FILES[choice] ?? strings.demo.deployFallback);
  if (kind === "feature") return strings.demo.featureApplied(2 + (choice.length % 3));
  return strings.demo.otherApplied;
}

type Choice = { kind: "deploy" | "feature" | "other"; choice: string };

/** Each answer's choices in order, tagged with what they decide; the free text of 其他 comes last. */
function choicesOf(answers: readonly AskAnswer[]): Choice[] {
  return answers.flatMap((answer): Choice[] => {
    const kind: Choice["kind"] = DEPLOY_QUESTIONS.has(answer.question) ? "deploy" : "feature";
    return [
      ...answer.selectedLabels.map((choice) => ({ kind, choice })),
      ...(answer.customInput ? [{ kind: "other" as const, choice: answer.customInput }] : []),
    ];
  });
}

function choiceTitle({ kind, choice }: Choice): string {
  if (kind === "deploy") return strings.demo.deployTitle(choice);
  if (kind === "feature") return strings.demo.featureTitle(choice);
  return strings.demo.otherTitle(choice);
}

export function createDemoAgent(): Agent {
  return {
    name: "demo",
    async run(context: AgentContext): Promise<AgentResult> {
      // A resumed run picks up at its step: calls this run finished before the restart are not made again.
      const ctx: AgentContext = { ...context, callTool: replaying(context) };
      const text = ctx.input;
      if (text.includes("/quick")) {
        await ctx.callTool("scan_workspace", {}, { title: strings.demo.scanTitle });
        return { text: strings.demo.quickDone };
      }
      if (text.includes("/long")) {
        for (let index = 1; index <= 20; index += 1) {
          await ctx.callTool("process_chunk", { index }, { title: strings.demo.chunkTitle(index, 20) });
        }
        return { text: strings.demo.longDone };
      }
      await ctx.callTool("scan_workspace", {}, { title: strings.demo.scanTitle });
      if (text.includes("/fail")) throw new Error(strings.demo.failed);

      const questions = demoQuestions();
      const answers = text.includes("/parallel")
        ? (
            await Promise.all([
              ask(ctx, { questions: [questions.deploy], metadata: { source: "demo", part: 1 } }),
              ask(ctx, { questions: [questions.features], metadata: { source: "demo", part: 2 } }),
            ])
          ).flat()
        : await ask(ctx, {
            questions: [questions.deploy, questions.features],
            metadata: { source: "demo" },
          });

      for (const chosen of choicesOf(answers)) {
        await ctx.callTool("apply_choice", chosen, { title: choiceTitle(chosen) });
      }
      return { text: finalReply(answers, ctx.session.chatType === "group") };
    },
  };
}

/**
 * `callTool` that first gives back, in order, the results this run already saved in history (a run resumed
 * after a restart walks its script from the top); the first call not in history goes to the runner, where a
 * turn that was waiting on a question continues at that question.
 */
export function replaying(ctx: AgentContext): AgentContext["callTool"] {
  const results = new Map<string, string>();
  for (const message of ctx.history) {
    if (message.role === "tool" && message.toolCallId) results.set(message.toolCallId, message.content);
  }
  const done = ctx.history
    .filter((message) => message.role === "assistant" && message.runId === ctx.runId)
    .flatMap((message) => message.toolCalls ?? [])
    .map((call) => ({ name: call.name, arguments: call.arguments, result: results.get(call.id) }));
  return (name, args, options) => {
    const index = done.findIndex(
      (call) => call.name === name && call.arguments === JSON.stringify(args ?? {}),
    );
    const saved = index >= 0 ? done.splice(index, 1)[0]?.result : undefined;
    return saved !== undefined ? Promise.resolve(saved) : ctx.callTool(name, args, options);
  };
}

async function ask(ctx: AgentContext, input: AskInput): Promise<AskAnswer[]> {
  const result = askOutputSchema.safeParse(
    JSON.parse(
      await ctx.callTool(ASK_TOOL_NAME, input, {
        title: strings.model.askTitle,
        titleWords: bilingual.model.askTitle,
      }),
    ),
  );
  // An error result (timeout, cancel, no surface) carries no answers: carry on with the defaults.
  return result.success ? result.data.answers : [];
}

function finalReply(answers: AskAnswer[], group: boolean): string {
  if (answers.length === 0) return strings.demo.noAnswer;
  const lines = answers.map((answer) => {
    // The person typed the 其他 text: quoted as text in this markdown answer, so it cannot restyle the card.
    const custom = answer.customInput ? [strings.demo.otherAnswer(escapeText(answer.customInput))] : [];
    const parts = [...answer.selectedLabels, ...custom];
    return `- **${answer.question}** ${parts.join(strings.demo.listSeparator)}`;
  });
  return [group ? strings.demo.doneAsSenderChose : strings.demo.doneAsChosen, "", ...lines].join("\n");
}
