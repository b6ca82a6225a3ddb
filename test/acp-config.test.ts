import type { RequestPermissionRequest } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { parseAskInput } from "../src/asks/schema.ts";
import { loadConfig } from "../src/config.ts";
import { permissionAsk, permissionOutcome, refusedIn } from "../src/harness/agents/acp/permission.ts";

const request = (names: string[]): RequestPermissionRequest => ({
  sessionId: "s",
  toolCall: { toolCallId: "t1", title: "Run rm -rf build", kind: "execute" },
  options: names.map((name, i) => ({
    optionId: `o${i}`,
    name,
    kind: i === 0 ? "allow_once" : "reject_once",
  })),
});
const about = { title: "Run rm -rf build", kind: "execute" as const, where: "" };

describe("AGENT=acp configuration", () => {
  const base = { AGENT: "acp", ACP_COMMAND: "npx" };

  it("takes arguments as words or as a JSON array, and ACP_ENV as a JSON object", () => {
    expect(loadConfig({ ...base, ACP_ARGS: "@zed-industries/claude-code-acp --x" }).agent.acp?.args).toEqual([
      "@zed-industries/claude-code-acp",
      "--x",
    ]);
    const config = loadConfig({
      ...base,
      ACP_ARGS: '["a b", "c"]',
      ACP_ENV: '{"ANTHROPIC_BASE_URL":"http://x"}',
    });
    expect(config.agent.acp?.args).toEqual(["a b", "c"]);
    expect(config.agent.acp?.env.ANTHROPIC_BASE_URL).toBe("http://x");
    expect(config.agent.acp).toMatchObject({ terminal: false, idleTimeoutMs: 300_000 });
  });

  it("never hands the bot's own secrets to the agent process", () => {
    const config = loadConfig({
      ...base,
      PATH: "/usr/bin",
      FEISHU_APP_ID: "cli_x",
      FEISHU_APP_SECRET: "app-secret-value",
      AUTH_SECRET: "auth-secret-0123456789-0123456789ab",
      OPENAI_API_KEY: "sk-secret",
    });
    expect(config.agent.acp?.env).toEqual({ PATH: "/usr/bin" });
  });

  it("says how to fix a missing command or malformed ACP_ARGS / ACP_ENV", () => {
    expect(() => loadConfig({ AGENT: "acp" })).toThrow(/ACP_COMMAND: required with AGENT=acp/);
    expect(() => loadConfig({ ...base, ACP_ARGS: "[1,2]" })).toThrow(
      /ACP_ARGS must be words or a JSON array/,
    );
    expect(() => loadConfig({ ...base, ACP_ENV: "KEY=value" })).toThrow(/ACP_ENV must be a JSON object/);
    expect(() => loadConfig({ ...base, ACP_TERMINAL: "yes" })).toThrow(/ACP_TERMINAL accepts on or off/);
  });
});

describe("ACP permission requests as asks", () => {
  it("makes one valid single-choice question from the agent's options, naming the tool call", () => {
    const ask = permissionAsk(request(["Allow", "Reject"]), about);
    expect(parseAskInput(ask.args).ok).toBe(true);
    expect(ask.args.questions[0]?.question).toBe("智能体想要执行命令：Run rm -rf build。允许吗？");
    expect(ask.args.questions[0]?.options.map((o) => o.label)).toEqual(["Allow", "Reject"]);
  });

  it("keeps the form valid for one option, more than four, and duplicate names", () => {
    const one = permissionAsk(request(["Allow"]), about);
    expect(parseAskInput(one.args).ok).toBe(true);
    expect(one.args.questions[0]?.options.map((o) => o.label)).toEqual(["Allow", "不允许"]);
    const many = permissionAsk(request(["A", "B", "C", "D", "E"]), about);
    expect(many.args.questions[0]?.options).toHaveLength(4);
    const same = permissionAsk(request(["OK", "OK"]), about);
    expect(parseAskInput(same.args).ok).toBe(true);
    expect(same.optionIds).toEqual(
      new Map([
        ["OK", "o0"],
        ["OK 2", "o1"],
      ]),
    );
  });

  it("answers selected only for a picked option; 不允许, custom text, timeout and cancel answer cancelled", () => {
    const { optionIds } = permissionAsk(request(["Allow"]), about);
    const answered = (labels: string[], custom: string | null = null) =>
      JSON.stringify({ answers: [{ question: "q", selectedLabels: labels, customInput: custom }] });
    expect(permissionOutcome(answered(["Allow"]), optionIds)).toEqual({
      outcome: "selected",
      optionId: "o0",
    });
    expect(permissionOutcome(answered(["不允许"]), optionIds)).toEqual({ outcome: "cancelled" });
    expect(permissionOutcome(answered([], "just do it"), optionIds)).toEqual({ outcome: "cancelled" });
    expect(
      permissionOutcome(JSON.stringify({ error: "User did not respond within timeout" }), optionIds),
    ).toEqual({
      outcome: "cancelled",
    });
    expect(permissionOutcome("not json", optionIds)).toEqual({ outcome: "cancelled" });
  });
  it("counts as a refusal only a pick of a reject option or 不允许, not a timeout, a cancel or typed text", () => {
    const answered = (labels: string[], custom: string | null = null) =>
      JSON.stringify({ answers: [{ question: "q", selectedLabels: labels, customInput: custom }] });
    const lone = permissionAsk(request(["Allow"]), about);
    expect(refusedIn(answered(["不允许"]), lone.refusals)).toBe(true);
    expect(refusedIn(answered(["Allow"]), lone.refusals)).toBe(false);
    const ask = permissionAsk(
      {
        sessionId: "s",
        toolCall: { toolCallId: "t" },
        options: [
          { optionId: "a", name: "Allow", kind: "allow_once" },
          { optionId: "r", name: "Reject", kind: "reject_once" },
          { optionId: "n", name: "Never", kind: "reject_always" },
        ],
      },
      about,
    );
    expect(refusedIn(answered(["Reject"]), ask.refusals)).toBe(true);
    expect(refusedIn(answered(["Never"]), ask.refusals)).toBe(true);
    expect(refusedIn(answered(["Allow"]), ask.refusals)).toBe(false);
    expect(refusedIn(answered([], "no thanks"), ask.refusals)).toBe(false);
    expect(refusedIn(JSON.stringify({ error: "Session cancelled" }), ask.refusals)).toBe(false);
  });
});
