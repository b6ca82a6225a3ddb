import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CARD_RULE_IDS, type CardRuleId, checkCard } from "../src/local/emulator/card-checker/index.ts";

/**
 * The emulator's independent card checker (src/local/emulator/card-checker/), judged on cards written
 * here by hand from the doc pages, never produced by our builder, plus the golden cards in cards/.
 */

type Json = Record<string, unknown>;
const dir = path.resolve(import.meta.dirname, "..", "cards");

/** A minimal valid card around some body elements. */
function card(elements: unknown[], extra: Json = {}): Json {
  return { schema: "2.0", config: { update_multi: true }, body: { elements }, ...extra };
}
const text = (content: string) => ({ tag: "plain_text", content });
const submit = (name = "f_submit") => ({
  tag: "button",
  name,
  text: text("提交"),
  type: "primary_filled",
  form_action_type: "submit",
  behaviors: [{ type: "callback", value: { kind: "answer" } }],
});
const form = (name: string, elements: unknown[]) => ({ tag: "form", name, elements });
const md = (content: string) => ({ tag: "markdown", content });
const select = (name: string, values: string[], extra: Json = {}) => ({
  tag: "select_static",
  name,
  options: values.map((value) => ({ text: text(value), value })),
  ...extra,
});
const header = (extra: Json) => ({ header: { title: text("任务"), ...extra } });
const nest = (levels: number): unknown =>
  levels === 0
    ? md("deep")
    : { tag: "collapsible_panel", header: { title: text("x") }, elements: [nest(levels - 1)] };

/** One card per rule that breaks exactly that rule. `Record` makes a missing rule a type error. */
const REFUSED: Record<CardRuleId, Json> = {
  "schema-version": { ...card([]), schema: "1.0" },
  "v1-only": card([{ tag: "note", elements: [] }]),
  "unknown-property": card([{ ...md("x"), colour: "red" }]),
  "property-value": card([
    { tag: "button", text: text("x"), type: "huge", behaviors: [{ type: "callback", value: {} }] },
  ]),
  "unknown-tag": card([{ tag: "paragraph", content: "x" }]),
  "unmodelled-tag": card([{ tag: "img", img_key: "img_v3_x" }]),
  "update-multi": { ...card([]), config: { update_multi: false } },
  "header-title": card([], header({ title: undefined, subtitle: text("only a subtitle") })),
  "header-template": card([], header({ template: "neutral" })),
  "tag-color": card(
    [],
    header({ text_tag_list: [{ tag: "text_tag", text: text("已取消"), color: "grey" }] }),
  ),
  color: card([{ tag: "column_set", background_style: "sky", columns: [] }]),
  "element-id": card([{ ...md("x"), element_id: "1st" }]),
  "element-id-unique": card([
    { ...md("a"), element_id: "same" },
    { tag: "hr", element_id: "same" },
  ]),
  "name-unique": card([
    form("f1", [select("q", ["a"]), submit("s1")]),
    form("f2", [select("q", ["a"]), submit("s2")]),
  ]),
  "form-root": card([{ tag: "column_set", columns: [{ tag: "column", elements: [form("f", [submit()])] }] }]),
  "container-children": card([form("f", [{ tag: "table", columns: [], rows: [] }, submit()])]),
  "form-submit": card([form("f", [select("q", ["a"])])]),
  "form-field-name": card([form("f", [{ tag: "input" }, submit()])]),
  "form-button": card([form("f", [{ ...submit("other"), form_action_type: undefined }, submit()])]),
  "form-only": card([{ tag: "multi_select_static", name: "m", options: [{ text: text("a"), value: "a" }] }]),
  "button-behaviors": card([
    { tag: "button", text: text("取消"), behaviors: [{ type: "callback", value: "cancel" }] },
  ]),
  options: card([form("f", [select("q", ["a", "a"]), submit()])]),
  "text-length": card([
    { tag: "button", text: text("长".repeat(101)), behaviors: [{ type: "callback", value: {} }] },
  ]),
  "url-scheme": card([md("[打开](javascript:alert(1))")]),
  "url-chars": card([
    md(
      "<a href='https://example.com/logs?from=31/12/2014 23:59:59'>日志</a> [文档](https://example.com/文档)",
    ),
  ]),
  "url-query": card([md("[日志](https://example.com/logs?from=31/12/2014&next=https://x.org)")]),
  "md-image": card([md("![截图](https://example.com/a.png)")]),
  "md-bare-url": card([md("详情见 https://example.com/run/42中文说明")]),
  "card-tables": card(Array.from({ length: 2 }, () => md("|a|b|\n|-|-|\n|1|2|\n\n|c|d|\n|-|-|\n|3|4|"))),
  "md-at": card([md("<at></at> 和 <at id=''></at> 和 <at id=ou_1>")]),
  "md-at-code": card([md("`<at id=all></at>`\n\n```\n<at id=ou_1></at>\n```")]),
  depth: card([nest(6)]),
  "component-count": card(Array.from({ length: 201 }, () => ({ tag: "hr" }))),
  size: card([]), // judged by content.ts (230025), see below
};

function rules(input: unknown): CardRuleId[] {
  const verdict = checkCard(input);
  return verdict.ok ? [] : verdict.violations.map((violation) => violation.rule);
}

describe("card checker", () => {
  const goldens = fs.readdirSync(dir).filter((file) => file.endsWith(".json"));

  it.each(goldens)("passes the golden card %s", (file) => {
    const golden: unknown = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
    const verdict = checkCard(golden);
    expect(verdict.ok ? "ok" : verdict.summary).toBe("ok");
  });

  it.each(CARD_RULE_IDS.filter((rule) => rule !== "size"))(
    "refuses a card breaking %s, naming that rule only",
    (rule) => {
      expect(new Set(rules(REFUSED[rule]))).toEqual(new Set([rule]));
    },
  );

  it("refuses a grey text_tag and accepts the same tag in neutral; grey stays valid as a header template", () => {
    const tag = (color: string) => ({ tag: "text_tag", text: text("已取消"), color });
    const verdict = checkCard(card([], header({ template: "grey", text_tag_list: [tag("grey")] })));
    expect(verdict).toMatchObject({
      ok: false,
      violations: [{ rule: "tag-color", path: "header.text_tag_list[0].color" }],
    });
    expect(checkCard(card([], header({ template: "grey", text_tag_list: [tag("neutral")] })))).toMatchObject({
      ok: true,
    });
  });

  it("accepts documented shapes the builder never uses (custom colours, i18n, card_link, weighted columns)", () => {
    const documented = card(
      [
        {
          tag: "div",
          text: { tag: "lark_md", content: "**加粗** <at id=all></at>", text_color: "grey-600", lines: 2 },
        },
        {
          tag: "column_set",
          flex_mode: "bisect",
          background_style: "brand",
          columns: [
            { tag: "column", width: "weighted", weight: 2, padding: "4px 0", elements: [md("左")] },
            { tag: "column", width: "120px", vertical_spacing: "small", elements: [md("右")] },
          ],
        },
        {
          tag: "markdown",
          content:
            "[文档](https://open.feishu.cn/document) <link url='https://open.feishu.cn' pc_url=''>链接</link>",
          i18n_content: { en_us: "[Docs](https://open.feishu.cn/document)" },
          text_size: "heading-2",
          icon: { tag: "standard_icon", token: "chat_outlined", color: "rgba(5,157,178,0.52)" },
        },
        md(
          "代码里的 `![x](https://a/b.png)` 和\n```js\nconst u = 'https://a.com/中文';\n```\n拨打 [电话](tel://10086) ![图](img_v3_0238_073f1823-df2b-4377)",
        ),
        {
          tag: "button",
          text: text("打开"),
          width: "fill",
          behaviors: [
            {
              type: "open_url",
              default_url: "https://a.com",
              ios_url: "lark://msgcard/unsupported_action",
              pc_url: "",
            },
          ],
        },
      ],
      {
        config: {
          update_multi: true,
          width_mode: "compact",
          locales: ["zh_cn", "en_us"],
          summary: { content: "摘要", i18n_content: { en_us: "Summary" } },
          style: {
            color: { brand: { light_mode: "rgba(5,157,178,0.52)", dark_mode: "rgba(78,23,108,0.49)" } },
          },
        },
        card_link: { url: "https://open.feishu.cn" },
        header: {
          title: { tag: "lark_md", content: "标题" },
          template: "indigo",
          i18n_text_tag_list: { en_us: [{ tag: "text_tag", text: text("Done"), color: "lime" }] },
          padding: "12px 8px 12px 8px",
        },
      },
    );
    const verdict = checkCard(documented);
    expect(verdict.ok ? "ok" : verdict.summary).toBe("ok");
  });

  it("accepts the shapes the docs' own 2.0 examples use (issue 23)", () => {
    const docs = card(
      [
        // 表单容器 page: buttons without behaviors, a component's fallback; 分栏 page: spacing "default".
        {
          ...form("f", [
            { tag: "input", name: "i", fallback: { tag: "fallback_text", text: text("请升级客户端") } },
            {
              tag: "column_set",
              horizontal_spacing: "default",
              columns: [
                {
                  tag: "column",
                  elements: [
                    { tag: "button", name: "ok", text: text("提交"), form_action_type: "submit" },
                    { tag: "button", name: "no", text: text("取消"), form_action_type: "reset" },
                  ],
                },
              ],
            },
          ]),
          fallback: { tag: "fallback_text", text: text("仅支持在 V6.6 及以上版本使用") },
        },
        { tag: "hr", fallback: "drop" },
        { tag: "button", text: text("看看"), type: "default" },
        // 结构 page: with locales set, other languages simply do not show.
        { ...md("任务"), i18n_content: { zh_cn: "任务", en_us: "Task", ja_jp: "タスク" } },
        md("<at id=all></at> <at ids=ou_1,ou_2></at> <at email=test@email.com></at>"),
        md("[报表](https://example.com/r?date=2014%2F12%2F31&q=a+b#/view?tab=1)"),
      ],
      {
        config: { update_multi: true, locales: ["zh_cn", "en_us", "zh_cn"] },
        i18n_header: { zh_cn: { title: text("我的近期审批效率"), template: "orange" } },
      },
    );
    const verdict = checkCard(docs);
    expect(verdict.ok ? "ok" : verdict.summary).toBe("ok");
    expect(rules(card([], { i18n_header: { zh_cn: { template: "orange" } } }))).toEqual(["header-title"]);
  });

  it("counts tables per language: three in each is fine, a fourth in one is not", () => {
    const three = md("|a|\n|-|\n|1|\n\n|b|\n|-|\n|2|\n\n|c|\n|-|\n|3|");
    expect(rules(card([three]))).toEqual([]);
    const fourInEnglish = { ...three, i18n_content: { en_us: `${three.content}\n\n|d|\n|-|\n|4|` } };
    expect(checkCard(card([fourInEnglish]))).toMatchObject({
      ok: false,
      violations: [{ rule: "card-tables", message: expect.stringContaining("(en_us)") }],
    });
  });

  it("counts every tagged object towards 200, option texts included", () => {
    const options = (n: number) => Array.from({ length: n }, (_, i) => String(i));
    // 1 form + 1 select + n option texts + button + its text = n + 4
    const at = (n: number) => card([form("f", [select("q", options(n)), submit()])]);
    expect(checkCard(at(196))).toMatchObject({ ok: true, tagged: 200 });
    expect(rules(at(197))).toEqual(["component-count"]);
  });

  it("lets the submit button sit in a column set inside the form, and reset buttons alongside", () => {
    const columns = { tag: "column_set", columns: [{ tag: "column", elements: [submit()] }] };
    const reset = { ...submit("f_reset"), form_action_type: "reset" };
    expect(rules(card([form("f", [select("q", ["a"]), columns, reset])]))).toEqual([]);
  });

  it("judges markdown in panel titles and i18n contents too, and never code", () => {
    const panel = {
      tag: "collapsible_panel",
      header: { title: { tag: "markdown", content: "![x](http://a/b.png)" } },
      elements: [],
    };
    expect(rules(card([panel]))).toEqual(["md-image"]);
    expect(rules(card([{ ...md("ok"), i18n_content: { en_us: "see https://a.com/中" } }]))).toEqual([
      "md-bare-url",
    ]);
    expect(rules(card([md("`https://a.com/中` and\n\n    ![x](http://indented/code)")]))).toEqual([]);
  });

  it("does not count an escaped URL as a bare one (the way a degraded, escaped card shows it)", () => {
    expect(rules(card([md("部署到 https://a.com/run中")]))).toEqual(["md-bare-url"]);
    expect(rules(card([md("部署到 https&#58;//a.com/run中 或 https\\://b.com/x中")]))).toEqual([]);
  });

  it("lets full-width punctuation end a bare URL but not Chinese letters glued to it", () => {
    expect(rules(card([md("已部署到 https://a.com/run/42。请查看，谢谢")]))).toEqual([]);
    expect(rules(card([md("（https://a.com/run/42）✅")]))).toEqual([]);
    expect(rules(card([md("已部署到 https://a.com/run/42请查看")]))).toEqual(["md-bare-url"]);
  });

  it("allows 5 levels of nesting and refuses the 6th", () => {
    expect(rules(card([nest(4)]))).toEqual([]);
    expect(rules(card([nest(5)]))).toEqual(["depth"]);
  });

  it("says what is wrong and where, in one line the emulator can return", () => {
    const verdict = checkCard(card([form("f", [{ tag: "input", name: "q", max_length: 2000 }, submit()])]));
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.summary).toMatch(
      /^\[property-value\] body\.elements\[0\]\.elements\[0\]\.max_length: .*2000/,
    );
  });

  it("refuses JSON nested past any sane depth instead of exhausting the stack", () => {
    const deep = JSON.parse(
      `{"schema":"2.0","body":{"elements":[${"[".repeat(14_000)}${"]".repeat(14_000)}]}}`,
    );
    expect(rules(deep)).toEqual(["depth"]);
  });

  it("never throws on hostile input", () => {
    for (const input of [
      null,
      1,
      "card",
      [],
      { schema: "2.0", body: { elements: [null, 1, [], { tag: 5 }] } },
      { schema: "2.0", body: "x", header: 1, config: [] },
    ])
      expect(() => checkCard(input)).not.toThrow();
  });
});
