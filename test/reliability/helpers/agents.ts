import { ASK_TOOL_NAME, type AskInput } from "../../../src/asks/schema.ts";
import type { Agent } from "../../../src/harness/agents/agent.ts";
import { sampleAsk } from "../../fixtures.ts";

/** An agent whose run asks the same questions again and again until it is stopped; keeps every result. */
export function loopingAskAgent(input: AskInput = sampleAsk()): Agent & { results: string[] } {
  const results: string[] = [];
  return {
    name: "looping-ask",
    results,
    async run(ctx) {
      while (!ctx.signal.aborted) {
        results.push(await ctx.callTool(ASK_TOOL_NAME, input, { title: "ask" }));
      }
      return { text: "stopped" };
    },
  };
}

/** Placeholders a generated payload carries where the live session and question ids go. */
export const REQ = "__REQUEST_ID__";
export const SES = "__SESSION_ID__";

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
