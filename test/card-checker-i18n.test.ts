import { describe, expect, it } from "vitest";
import { type CardRuleId, checkCard } from "../src/local/emulator/card-checker/index.ts";

/**
 * The independent checker on bilingual cards (issue 19), with cards written here by hand from D-i18n:
 * `i18n_content` next to `content`, `config.locales`, and the same limits on every language's text.
 */

type Json = Record<string, unknown>;
const card = (elements: unknown[], config: Json = {}, extra: Json = {}): Json => ({
  schema: "2.0",
  config: { update_multi: true, locales: ["zh_cn", "en_us"], ...config },
  body: { elements },
  ...extra,
});
const both = (zh: string, en: string) => ({ content: zh, i18n_content: { zh_cn: zh, en_us: en } });
const button = (text: Json) => ({
  tag: "button",
  text: { tag: "plain_text", ...text },
  type: "default",
  behaviors: [{ type: "callback", value: { kind: "progress" } }],
});
const form = (elements: unknown[]) => ({
  tag: "form",
  name: "f",
  elements: [
    ...elements,
    {
      tag: "button",
      name: "f_submit",
      text: { tag: "plain_text", ...both("提交", "Submit") },
      type: "primary_filled",
      form_action_type: "submit",
      behaviors: [{ type: "callback", value: { kind: "answer" } }],
    },
  ],
});

function rules(input: unknown): CardRuleId[] {
  const verdict = checkCard(input);
  return verdict.ok ? [] : verdict.violations.map((violation) => violation.rule);
}
function paths(input: unknown): string[] {
  const verdict = checkCard(input);
  return verdict.ok ? [] : verdict.violations.map((violation) => violation.path);
}

describe("card checker: languages", () => {
  it("accepts a card in both languages: header, summary, tags, markdown, buttons, placeholders", () => {
    const bilingual = card(
      [
        { tag: "markdown", ...both("**步骤**", "**Steps**") },
        button(both("取消任务", "Cancel task")),
        form([
          {
            tag: "input",
            name: "other",
            placeholder: { tag: "plain_text", ...both("其他(可选)", "Other (optional)") },
          },
        ]),
      ],
      { summary: both("执行中", "Running") },
      {
        header: {
          title: { tag: "plain_text", ...both("任务", "Task") },
          template: "blue",
          text_tag_list: [
            { tag: "text_tag", text: { tag: "plain_text", ...both("执行中", "Running") }, color: "blue" },
          ],
        },
      },
    );
    expect(rules(bilingual)).toEqual([]);
  });

  it("refuses a language code the docs do not list, in any i18n map", () => {
    // A map's keys are its properties: an unlisted code is an unsupported property.
    expect(rules(card([{ tag: "markdown", content: "x", i18n_content: { en: "x" } }]))).toContain(
      "unknown-property",
    );
    expect(rules(card([], { summary: { content: "x", i18n_content: { english: "x" } } }))).toContain(
      "unknown-property",
    );
    expect(rules(card([], { locales: ["zh_cn", "klingon"] }))).toContain("property-value");
  });

  it("accepts text in a language config.locales does not list: only the listed ones show (结构 page)", () => {
    const unlisted = card([{ tag: "markdown", ...both("任务", "Task") }], { locales: ["zh_cn"] });
    expect(rules(unlisted)).toEqual([]);
    const tagList = card(
      [],
      { locales: ["en_us"] },
      {
        header: {
          title: { tag: "plain_text", content: "Task" },
          i18n_text_tag_list: {
            ja_jp: [{ tag: "text_tag", text: { tag: "plain_text", content: "実行中" } }],
          },
        },
      },
    );
    expect(rules(tagList)).toEqual([]);
  });

  it("applies the 100-character limits to every language's button text and placeholder", () => {
    const long = "Cancel ".repeat(15);
    expect(paths(card([button(both("取消", long))]))).toEqual(["body.elements[0].text.i18n_content.en_us"]);
    const placeholder = form([
      { tag: "input", name: "other", placeholder: { tag: "plain_text", ...both("其他", long) } },
    ]);
    expect(paths(card([placeholder]))).toEqual([
      "body.elements[0].elements[0].placeholder.i18n_content.en_us",
    ]);
  });

  it("checks every language's markdown: an image without an upload is refused in English too", () => {
    const md = { tag: "markdown", ...both("截图", "![shot](https://example.com/a.png)") };
    expect(rules(card([md]))).toEqual(["md-image"]);
    expect(paths(card([md]))).toEqual(["body.elements[0].i18n_content.en_us"]);
  });
});
