import { afterEach, describe, expect, it, vi } from "vitest";
import { elicitFields } from "../src/asks/elicitation.ts";
import { mapElicitFormValue } from "../src/cards/form-value.ts";
import { CallTracker } from "../src/harness/agents/mcp/calls.ts";
import { mapToolResult } from "../src/harness/agents/mcp/result.ts";
import { exposedName } from "../src/harness/agents/mcp/servers.ts";
import type { ToolContext } from "../src/harness/dispatcher.ts";
import { privateSession } from "./helpers/core.ts";

const schema = {
  type: "object",
  properties: {
    name: { type: "string", title: "姓名" },
    age: { type: "integer", title: "年龄" },
    score: { type: "number" },
    ok: { type: "boolean" },
    color: { type: "string", enum: ["r", "g"], enumNames: ["红", "绿"] },
    tags: { type: "array", items: { enum: ["a", "b", "c"] } },
  },
  required: ["name", "age"],
};

describe("elicitation schema → card fields → content", () => {
  it("maps each property kind and reads a form back in the schema's shape", () => {
    const parsed = elicitFields(schema);
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.fields.map((field) => [field.key, field.kind, field.required])).toEqual([
      ["name", "text", true],
      ["age", "number", true],
      ["score", "number", false],
      ["ok", "boolean", false],
      ["color", "choice", false],
      ["tags", "multi", false],
    ]);
    const form = {
      ask2_f0: " 李雷 ",
      ask2_f1: "30",
      ask2_f2: "1,234.5",
      ask2_f3: "no",
      ask2_f4: "1",
      ask2_f5: ["2", "0", "2"],
    };
    expect(mapElicitFormValue(parsed.fields, form, 2)).toEqual({
      ok: true,
      content: { name: "李雷", age: 30, score: 1234.5, ok: false, color: "g", tags: ["c", "a"] },
    });
    // Fields of another form on the card do not count.
    expect(mapElicitFormValue(parsed.fields, form, 0)).toMatchObject({ ok: false, problem: "missing" });
  });

  it("refuses a bad number, a fractional integer and a missing required field; leaves out empty optional ones", () => {
    const parsed = elicitFields(schema);
    if (!parsed.ok) throw new Error(parsed.error);
    const check = (form: unknown) => {
      const mapped = mapElicitFormValue(parsed.fields, form, 0);
      return mapped.ok ? mapped.content : [mapped.problem, mapped.field.key];
    };
    expect(check({ ask0_f0: "x", ask0_f1: "1.5" })).toEqual(["number", "age"]);
    expect(check({ ask0_f0: "x", ask0_f1: "3", ask0_f2: "abc" })).toEqual(["number", "score"]);
    expect(check({ ask0_f0: "  ", ask0_f1: "3" })).toEqual(["missing", "name"]);
    expect(check({ ask0_f0: "x", ask0_f1: "3", ask0_f4: "9", ask0_f5: "not-a-list" })).toEqual({
      name: "x",
      age: 3,
    });
    expect(check(null)).toEqual(["missing", "name"]);
  });

  it("says what a card cannot show (nested objects)", () => {
    const nested = elicitFields({
      type: "object",
      properties: { address: { type: "object", properties: {} } },
    });
    expect(nested.ok).toBe(false);
  });
});

describe("MCP tool results and call timeouts", () => {
  it("maps text, other content and isError", () => {
    expect(
      mapToolResult({
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
    expect(mapToolResult({ content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] })).toBe(
      "[image image/png, 4 base64 characters]",
    );
    expect(mapToolResult({ content: [], structuredContent: { n: 1 } })).toBe('{"n":1}');
    expect(JSON.parse(mapToolResult({ content: [{ type: "text", text: "boom" }], isError: true }))).toEqual({
      error: "boom",
    });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it("times a call out, but not while the person answers the server's form", () => {
    vi.useFakeTimers();
    const ctx: ToolContext = {
      session: privateSession(),
      runId: "r",
      senderId: "u",
      signal: new AbortController().signal,
    };
    const calls = new CallTracker();
    const call = calls.start(ctx, 1000);
    expect(calls.current()).toBe(call);
    vi.advanceTimersByTime(900);
    const resume = call.pause();
    vi.advanceTimersByTime(60_000);
    expect(call.signal.aborted).toBe(false);
    resume();
    vi.advanceTimersByTime(999);
    expect(call.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(call.timedOut).toBe(true);
    expect(call.signal.aborted).toBe(true);
    call.end();
    expect(calls.current()).toBeUndefined();
  });

  it("routes an elicitation to the running call only when all running calls are one person's", () => {
    const signal = new AbortController().signal;
    const ctx = (sessionUser: string, senderId: string): ToolContext => ({
      session: privateSession(sessionUser),
      runId: "r",
      senderId,
      signal,
    });
    const calls = new CallTracker();
    const a1 = calls.start(ctx("ou_a", "ou_a"), 60_000);
    const a2 = calls.start(ctx("ou_a", "ou_a"), 60_000);
    expect(calls.current()).toBe(a2);
    const b = calls.start(ctx("ou_b", "ou_b"), 60_000);
    expect(calls.current()).toBeUndefined();
    b.end();
    expect(calls.current()).toBe(a2);
    a2.end();
    a1.end();
    expect(calls.current()).toBeUndefined();
  });

  it("names tools server__tool within the chat API's rule", () => {
    expect(exposedName("fs", "read_text_file")).toBe("fs__read_text_file");
    expect(exposedName("gh", "issues.list all")).toBe("gh__issues_list_all");
    expect(exposedName("x", "t".repeat(62))).toBeUndefined();
    expect(exposedName("x", "")).toBeUndefined();
  });
});
