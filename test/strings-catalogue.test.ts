import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bilingual, catalogues, en, zh } from "./helpers/strings-all.ts";
import { type Rendered, renderStrings } from "./helpers/strings-render.ts";

// Taken from the code before the English catalogue existed: the Chinese text must never drift from it.
const before: Rendered = JSON.parse(
  readFileSync(new URL("./fixtures/zh-strings.json", import.meta.url), "utf8"),
);

/** Every leaf of a rendered table with its dotted path. */
function leaves(table: Rendered, prefix = ""): [string, string][] {
  return Object.entries(table).flatMap(([key, value]): [string, string][] => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof value === "string") return [[path, value]];
    if (Array.isArray(value)) return value.map((text, i): [string, string] => [`${path}[${i}]`, text]);
    return leaves(value, path);
  });
}

/** Functions with the number of parameters each takes, by path. */
function arities(table: object, prefix = ""): Record<string, number | "text"> {
  const out: Record<string, number | "text"> = {};
  for (const [key, value] of Object.entries(table)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof value === "function") out[path] = value.length;
    else if (typeof value === "string") out[path] = "text";
    else Object.assign(out, arities(value, path));
  }
  return out;
}

const CJK = /[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]/;

describe("string catalogue", () => {
  it("keeps the Chinese strings byte-identical to the snapshot taken before English was added", () => {
    // Every string of the snapshot, each sample rendering, unchanged; strings added since may be new.
    const now = new Map(leaves(renderStrings(zh)));
    const changed = leaves(before).filter(([path, text]) => now.get(path) !== text);
    expect(changed).toEqual([]);
    expect(leaves(before).length).toBeGreaterThan(600);
    expect(catalogues.zh_cn).toBe(zh);
  });

  it("has an English entry for every Chinese one, taking the same arguments", () => {
    expect(arities(en)).toEqual(arities(zh));
  });

  it("writes English without Chinese characters, placeholders or empty texts", () => {
    const english = leaves(renderStrings(en));
    expect(english.length).toBeGreaterThan(600);
    const bad = english.filter(
      ([path, text]) =>
        CJK.test(text) ||
        /undefined|\[object /.test(text) ||
        // Text samples ([4], [5], [7]) passed where a number belongs make NaN in either language.
        (text.includes("NaN") && !/\[[457]\]$/.test(path)) ||
        // Only the sample arguments may be empty, never a text on its own.
        (text.trim() === "" && !path.includes("[")),
    );
    expect(bad).toEqual([]);
  });

  it("says 1 question and 2 questions", () => {
    expect(en.card.summaryWaiting(1)).toBe("Waiting for your answer to 1 question");
    expect(en.card.summaryWaiting(2)).toBe("Waiting for your answer to 2 questions");
    expect(en.feishu.askPing(1)).toBe(
      "1 question is waiting for your answer. Please answer on the card above",
    );
  });

  it("answers every text in both languages at once", () => {
    expect(bilingual.feishu.onlySender).toEqual({ zh_cn: zh.feishu.onlySender, en_us: en.feishu.onlySender });
    expect(bilingual.unanswered(2, "部署")).toEqual({
      zh_cn: "第 2 题「部署」：请至少选择一项或填写其他",
      en_us: 'Question 2 "部署": choose at least one option or fill in Other',
    });
    expect(bilingual.acp.toolKinds.execute).toEqual({ zh_cn: "执行命令", en_us: "run a command" });
  });
});
