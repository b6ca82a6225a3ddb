import { describe, expect, it } from "vitest";
import { CONSOLE_WORDS } from "../src/local/console/public/words.ts";
import { zh } from "./helpers/strings-all.ts";
import { type Rendered, renderStrings } from "./helpers/strings-render.ts";

/**
 * Chinese text uses full-width punctuation (issue 25): `Agent（MCP）`, `Agent，它`, never `Agent(MCP)` or
 * `Agent,它`. Every Chinese string the bot and the console write, each function with sample arguments, is
 * scanned for a half-width , ; : ? ! ( ) that touches a Chinese character or sits between Chinese text and
 * a word. The one exception is the seed's own `其他(可选)` (feishu-card-ask-design §4), kept as it writes it.
 */

const SEED_AS_WRITTEN = ["其他(可选)"];

const HAN = "\\u3400-\\u9fff";
/** A half-width mark next to a Chinese character, or a bracket opening or closing around one. */
const HALF_WIDTH = new RegExp(
  `[${HAN}][,;:?!()]|[,;:?!()][${HAN}]|\\([^()]*[${HAN}][^()]*\\)|[${HAN}][^\\n${HAN}]{0,20}\\(|\\)[^\\n${HAN}]{0,2}[${HAN}]`,
  "u",
);

function leaves(table: Rendered, prefix = ""): [string, string][] {
  return Object.entries(table).flatMap(([key, value]): [string, string][] => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof value === "string") return [[path, value]];
    if (Array.isArray(value)) return value.map((text, i): [string, string] => [`${path}[${i}]`, text]);
    return leaves(value, path);
  });
}

/** The console's table holds lists of examples too: each entry's fields as leaves. */
function consoleLeaves(): [string, string][] {
  const { examples, ...rest } = CONSOLE_WORDS.zh_cn;
  const listed = examples.flatMap((example, i): [string, string][] => [
    [`examples[${i}].text`, example.text],
    [`examples[${i}].title`, example.title],
  ]);
  return [...leaves(renderStrings(rest)), ...listed];
}

function halfWidthIn(text: string): boolean {
  const unexcepted = SEED_AS_WRITTEN.reduce((rest, kept) => rest.split(kept).join(""), text);
  // Markdown link targets and code are not prose: `[会话详情](url)`, `` `/quick` ``.
  const prose = unexcepted.replace(/\]\([^)]*\)/g, "]").replace(/`[^`]*`/g, "");
  return HALF_WIDTH.test(prose);
}

describe("Chinese punctuation", () => {
  it("finds the half-width marks it is meant to find", () => {
    expect(halfWidthIn("连接外部 Agent(MCP)")).toBe(true);
    expect(halfWidthIn("把配置给你的 Agent,它就能提问")).toBe(true);
    expect(halfWidthIn("请稍后再试:连接失败")).toBe(true);
    expect(halfWidthIn("连接外部 Agent（MCP）")).toBe(false);
    expect(halfWidthIn("其他(可选)")).toBe(false);
    expect(halfWidthIn("可在[会话详情](http://x/y)中回答")).toBe(false);
  });

  it("is full-width in every Chinese string of the bot's catalogue", () => {
    const found = leaves(renderStrings(zh)).filter(([, text]) => halfWidthIn(text));
    expect(found).toEqual([]);
  });

  it("is full-width in every Chinese string of the console", () => {
    const found = consoleLeaves().filter(([, text]) => halfWidthIn(text));
    expect(found).toEqual([]);
  });
});
