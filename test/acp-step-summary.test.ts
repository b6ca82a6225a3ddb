import { describe, expect, it } from "vitest";
import { hidePaths, summarize } from "../src/harness/agents/acp/step-summary.ts";

const ROOTS = [
  "/srv/bot/data/workspaces/feishu-private/ou_a",
  "/srv/bot/data/workspaces/feishu-private/ou_a/",
];

describe("an ACP step's summary", () => {
  it("shows paths in the workspace relative to it, the workspace as ., and elides other host paths", () => {
    const root = ROOTS[0] ?? "";
    expect(hidePaths(`${root}/src/app.ts:3: TODO`, ROOTS)).toBe("src/app.ts:3: TODO");
    expect(hidePaths(`cd ${root} && ls`, ROOTS)).toBe("cd . && ls");
    expect(hidePaths(`[in ${root}/]`, ROOTS)).toBe("[in .]");
    expect(hidePaths("/usr/local/bin/node --version", ROOTS)).toBe("… --version");
    // A sibling workspace is another chat's: elided, never shown relative.
    expect(hidePaths(`${root}x/secret.txt`, ROOTS)).toBe("…");
  });

  it("leaves URLs, relative paths, fractions and a lone slash command alone", () => {
    for (const text of ["https://example.com/a/b", "src/app/main.ts", "1/2/3", "run /help", "a / b"])
      expect(hidePaths(text, ROOTS)).toBe(text);
  });

  it("reads JSON output by its shape and other output by its first line", () => {
    const output = (text: string) =>
      summarize({ toolCallId: "t", content: [{ type: "content", content: { type: "text", text } }] });
    expect(output('[{"a":1}]')?.text).toBe("JSON 数组，1 项");
    expect(output('[{"a":1}]')?.words?.en_us).toBe("JSON array, 1 item");
    expect(output('{"a":1,"b":2}')?.text).toBe("JSON 对象，2 个键：a、b");
    expect(output("{}")?.words?.en_us).toBe("JSON object (empty)");
    expect(output("[INFO] started\nmore")?.text).toBe("[INFO] started");
    expect(summarize({ toolCallId: "t", rawOutput: { exit_code: 0, stdout: "x" } })?.text).toBe(
      "JSON 对象，2 个键：exit_code、stdout",
    );
  });
});
