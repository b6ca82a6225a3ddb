import { describe, expect, it } from "vitest";
import { type AskQuestion, LIMITS, parseAskInput } from "../src/asks/schema.ts";
import type { Card, CardNode, FormNode } from "../src/cards/model.ts";
import { type BuildOptions, buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { CARD_LIMITS, cardSize, countComponents, validateCard } from "../src/cards/rules.ts";
import { strings } from "../src/strings/index.ts";

// ---------------------------------------------------------------------------------------------------------
// Hand-made cards for validateCard: one valid baseline, and each rejection changes exactly one thing.
// ---------------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

const plain = (content: string) => ({ tag: "plain_text", content });
const md = (content: string): Json => ({ tag: "markdown", content });
const option = (value: string, label = `选项${value}`) => ({ text: plain(label), value });
const select = (name: string, extra: Json = {}): Json => ({
  tag: "select_static",
  name,
  required: false,
  placeholder: plain("请选择"),
  options: [option("0"), option("1")],
  ...extra,
});
const multiSelect = (name: string, extra: Json = {}): Json => ({
  tag: "multi_select_static",
  name,
  required: false,
  placeholder: plain("可多选"),
  selected_values: [],
  options: [option("0"), option("1")],
  ...extra,
});
const input = (name: string, extra: Json = {}): Json => ({
  tag: "input",
  name,
  required: false,
  placeholder: plain("其他(可选)"),
  ...extra,
});
const button = (extra: Json = {}): Json => ({
  tag: "button",
  text: plain("取消任务"),
  type: "danger",
  behaviors: [{ type: "callback", value: { kind: "progress", act: "cancel" } }],
  ...extra,
});
const submit = (name: string, extra: Json = {}): Json =>
  button({ name, text: plain("提交"), type: "primary_filled", form_action_type: "submit", ...extra });
const form = (name: string, elements: Json[]): Json => ({ tag: "form", name, elements });
const panel = (elements: Json[]): Json => ({
  tag: "collapsible_panel",
  expanded: false,
  header: { title: { tag: "markdown", content: "选项预览" } },
  elements,
});
const columns = (...cells: Json[][]): Json => ({
  tag: "column_set",
  flex_mode: "flow",
  columns: cells.map((elements) => ({ tag: "column", width: "auto", elements })),
});
const card = (elements: Json[], patch: Json = {}): Json => ({
  schema: "2.0",
  config: { update_multi: true },
  body: { elements },
  ...patch,
});

/** A form as the progress card builds it: a question, a select, an "other" input, a submit button. */
const askForm = (i: number): Json =>
  form(`ask${i}`, [
    md("**【部署】** 用哪种方式部署?"),
    select(`ask${i}_q0`),
    multiSelect(`ask${i}_q1`),
    input(`ask${i}_c0`, { max_length: 1000 }),
    submit(`ask${i}_submit`),
  ]);

function problemsOf(input: unknown): string[] {
  const check = validateCard(input);
  return check.ok ? [] : check.problems;
}

/** Rejected, and some problem message says what is wrong (matches `pattern`). */
function expectRejected(input: unknown, pattern: RegExp): void {
  const check = validateCard(input);
  expect(check.ok).toBe(false);
  expect(problemsOf(input).join("\n")).toMatch(pattern);
}

describe("validateCard", () => {
  it("accepts a minimal valid card", () => {
    const minimal = card([md("hello")]);
    expect(validateCard(minimal)).toEqual({ ok: true, card: minimal });
  });

  it("accepts the baseline the rejections below are built from: two forms, a panel, task buttons", () => {
    const baseline = card(
      [
        md("**步骤**"),
        panel([md("```\ncode\n```")]),
        askForm(0),
        askForm(1),
        columns([button()], [button({ text: plain("会话详情"), type: "default" })]),
      ],
      { header: { title: plain("任务"), template: "blue" } },
    );
    expect(problemsOf(baseline)).toEqual([]);
  });

  it("accepts a submit button that sits inside a column_set within the form", () => {
    const nested = card([form("ask0", [select("ask0_q0"), columns([submit("ask0_submit")])])]);
    expect(problemsOf(nested)).toEqual([]);
  });

  describe("strictness: 2.0 rejects unknown properties", () => {
    it("rejects an unknown config property, naming it", () => {
      expectRejected(
        card([md("x")], { config: { update_multi: true, foo: 1 } }),
        /config.*Unrecognized key.*"foo"/,
      );
    });

    it("rejects an unknown button property, naming it", () => {
      expectRejected(card([button({ colour: "red" })]), /body\.elements\.0.*"colour"/);
    });

    it("rejects an unknown property deep inside a form (on a select option), naming it", () => {
      const withIcon = select("ask0_q0", {
        options: [{ ...option("0"), icon: { token: "x" } }, option("1")],
      });
      expectRejected(card([form("ask0", [withIcon, submit("ask0_submit")])]), /"icon"/);
    });

    it("rejects an unknown top-level property and an unknown tag", () => {
      expectRejected(card([md("x")], { card_link: { url: "https://x" } }), /"card_link"/);
      expectRejected(card([{ tag: "table", rows: [] }]), /body\.elements\.0/);
    });
  });

  describe("forms", () => {
    it("rejects a form nested in a column_set", () => {
      expectRejected(card([columns([askForm(0)])]), /column cannot contain a form/);
      expectRejected(card([columns([askForm(0)])]), /form may only sit at the card root/);
    });

    it("rejects a form nested in a collapsible_panel", () => {
      expectRejected(card([panel([askForm(0)])]), /collapsible panel cannot contain a form/);
    });

    it("rejects a form inside another form", () => {
      const outer = form("outer", [askForm(0), submit("outer_submit")]);
      expectRejected(card([outer]), /a form cannot contain a form/);
    });

    it("rejects a form with no submit button (a reset button does not count)", () => {
      const noSubmit = form("ask0", [
        select("ask0_q0"),
        button({ name: "ask0_reset", form_action_type: "reset" }),
      ]);
      expectRejected(card([noSubmit]), /form "ask0" has no submit button/);
    });

    it("rejects two fields with the same name in one form", () => {
      const twice = form("ask0", [select("ask0_q0"), input("ask0_q0"), submit("ask0_submit")]);
      expectRejected(card([twice]), /name "ask0_q0" is used 2 times/);
    });

    it("rejects the same field name used in two different forms", () => {
      const first = form("ask0", [select("dup"), submit("ask0_submit")]);
      const second = form("ask1", [input("dup"), submit("ask1_submit")]);
      expectRejected(card([first, second]), /name "dup" is used 2 times/);
    });

    it("rejects two forms with the same name", () => {
      const a = form("ask0", [select("ask0_q0"), submit("ask0_submit")]);
      const b = form("ask0", [select("ask1_q0"), submit("ask1_submit")]);
      expectRejected(card([a, b]), /name "ask0" is used 2 times/);
    });

    it("rejects two submit buttons with the same name in different forms", () => {
      const a = form("ask0", [select("ask0_q0"), submit("submit")]);
      const b = form("ask1", [select("ask1_q0"), submit("submit")]);
      expectRejected(card([a, b]), /name "submit" is used 2 times/);
    });

    it("rejects a form with an empty name", () => {
      expectRejected(card([form("", [select("q"), submit("s")])]), /body\.elements\.0/);
    });
  });

  describe("fields", () => {
    it("rejects multi_select_static outside a form", () => {
      expectRejected(card([multiSelect("ask0_q0")]), /multi_select_static must sit inside a form/);
    });

    it("accepts a select_static outside a form (it fires on its own)", () => {
      expect(problemsOf(card([select("standalone")]))).toEqual([]);
    });

    it.each([
      ["select_static", select("ask0_q0", { required: undefined })],
      ["multi_select_static", multiSelect("ask0_q0", { required: undefined })],
      ["input", input("ask0_c0", { required: undefined })],
    ])("rejects a %s without an explicit `required`", (_tag, field) => {
      const withoutRequired = JSON.parse(JSON.stringify(field)) as Json;
      expect("required" in withoutRequired).toBe(false);
      expectRejected(card([form("ask0", [withoutRequired, submit("ask0_submit")])]), /body\.elements\.0/);
    });

    // BUG (src/cards/rules.ts validateCard): a type error inside one member of the cardNode union surfaces
    // only as zod's generic "body.elements.0: Invalid input", so the message does not say what is wrong.
    it("names `required` when a field lacks it", () => {
      const { required: _drop, ...noRequired } = select("ask0_q0");
      expectRejected(card([noRequired]), /required/);
    });

    it("rejects duplicate option values", () => {
      const dup = select("ask0_q0", { options: [option("0", "A"), option("0", "B")] });
      expectRejected(card([dup]), /option values must be unique/);
      const dupMulti = multiSelect("ask0_q0", { options: [option("1", "A"), option("1", "B")] });
      expectRejected(card([form("ask0", [dupMulti, submit("ask0_submit")])]), /option values must be unique/);
    });

    it("rejects selected_values that are not among the option values", () => {
      const stray = multiSelect("ask0_q0", { selected_values: ["0", "选项1"] });
      expectRejected(card([form("ask0", [stray, submit("ask0_submit")])]), /selected_values must be option/);
    });

    it("rejects a placeholder over 100 characters", () => {
      const long = select("q", { placeholder: plain("请".repeat(CARD_LIMITS.maxPlaceholderChars + 1)) });
      expectRejected(card([long]), /placeholder over 100 chars/);
    });
  });

  describe("buttons", () => {
    it("rejects a button inside a form without a name", () => {
      const noName = button({ form_action_type: "submit" });
      expectRejected(card([form("ask0", [select("ask0_q0"), noName])]), /button inside a form needs a name/);
    });

    it("rejects a button inside a form without form_action_type", () => {
      const plainButton = button({ name: "ask0_other" });
      const f = form("ask0", [select("ask0_q0"), plainButton, submit("ask0_submit")]);
      expectRejected(card([f]), /button inside a form needs form_action_type/);
    });

    it("rejects form_action_type on a button outside a form", () => {
      expectRejected(card([button({ form_action_type: "submit" })]), /form_action_type outside a form/);
    });

    it("rejects a button whose callback value is a string (the SDK only passes objects)", () => {
      const stringValue = button({ behaviors: [{ type: "callback", value: "cancel" }] });
      expectRejected(card([stringValue]), /body\.elements\.0/);
    });

    // BUG (src/cards/rules.ts validateCard): same union problem: the message is "body.elements.0: Invalid
    // input" and does not name `behaviors`/`value`.
    it("names the callback value when it is a string", () => {
      const stringValue = button({ behaviors: [{ type: "callback", value: "cancel" }] });
      expectRejected(card([stringValue]), /behaviors|value/);
    });

    it("rejects button text over 100 characters", () => {
      expectRejected(card([button({ text: plain("按".repeat(101)) })]), /button text over 100 chars/);
    });
  });

  describe("element_id", () => {
    it.each([
      ["starts with a digit", "1step"],
      ["has a hyphen", "step-one"],
      ["is longer than 20 chars", `s${"x".repeat(CARD_LIMITS.maxElementIdChars)}`],
    ])("rejects an element_id that %s", (_why, id) => {
      expectRejected(card([{ ...md("x"), element_id: id }]), new RegExp(`element_id "${id}" must be`));
    });

    it("accepts an element_id of exactly 20 letters, digits and _", () => {
      const id = `s_${"9".repeat(CARD_LIMITS.maxElementIdChars - 2)}`;
      expect(id).toHaveLength(20);
      expect(problemsOf(card([{ ...md("x"), element_id: id }]))).toEqual([]);
    });

    it("rejects an element_id used twice, even at different depths", () => {
      const twice = card([{ ...md("a"), element_id: "steps" }, panel([{ ...md("b"), element_id: "steps" }])]);
      expectRejected(twice, /element_id "steps" is used 2 times/);
    });
  });

  describe("limits", () => {
    /** A card whose cardSize is exactly `bytes` (ASCII filler, one byte per character). */
    function cardOfSize(bytes: number): Json {
      const overhead = cardSize(card([md("")]));
      return card([md("a".repeat(bytes - overhead))]);
    }

    it("accepts a card of exactly 30 KB and rejects one byte more", () => {
      const atLimit = cardOfSize(CARD_LIMITS.maxBytes);
      expect(cardSize(atLimit)).toBe(30 * 1024);
      expect(problemsOf(atLimit)).toEqual([]);
      expectRejected(cardOfSize(CARD_LIMITS.maxBytes + 1), /card is 30721 bytes; the limit is 30720/);
    });

    it("rejects a card that is under 30 KB as JSON.stringify counts it but over 30 KB as sent", () => {
      const quotes = card([md('"'.repeat(9000))]);
      expect(JSON.stringify(quotes).length).toBeLessThan(CARD_LIMITS.maxBytes);
      expectRejected(quotes, /bytes; the limit is 30720/);
    });

    it("accepts 200 components and rejects 201", () => {
      const hrs = (n: number) => card(Array.from({ length: n }, () => ({ tag: "hr" })));
      expect(countComponents(hrs(200))).toBe(200);
      expect(problemsOf(hrs(200))).toEqual([]);
      expectRejected(hrs(201), /card has 201 components; the limit is 200/);
    });

    it("counts each option's plain_text toward the 200 components", () => {
      const options = Array.from({ length: 99 }, (_, k) => option(String(k)));
      // form + select + placeholder + 99 option texts + submit + its text = 104; 96 more hr make 200.
      const elements = [
        form("ask0", [select("ask0_q0", { options }), submit("ask0_submit")]),
        ...Array.from({ length: 96 }, () => ({ tag: "hr" })),
      ];
      expect(problemsOf(card(elements))).toEqual([]);
      expectRejected(card([...elements, { tag: "hr" }]), /201 components/);
    });

    it("rejects update_multi:false", () => {
      expectRejected(card([md("x")], { config: { update_multi: false } }), /config\.update_multi/);
    });

    it('rejects schema "1.0" and a card without schema', () => {
      expectRejected(card([md("x")], { schema: "1.0" }), /schema/);
      const { schema: _drop, ...noSchema } = card([md("x")]);
      expectRejected(noSchema, /schema/);
    });

    it("rejects containers nested deeper than 5 levels, and accepts 4 levels", () => {
      const nest = (levels: number): Json => {
        let node: Json = md("deep");
        for (let i = 0; i < levels; i += 1) node = i % 2 === 0 ? panel([node]) : columns([node]);
        return node;
      };
      expect(problemsOf(card([nest(4)]))).toEqual([]);
      expectRejected(card([nest(6)]), /containers nest deeper than 5 levels/);
    });

    it("rejects things that are not cards at all, without throwing", () => {
      for (const junk of [null, undefined, "card", 42, [], {}]) {
        expect(() => validateCard(junk)).not.toThrow();
        expect(validateCard(junk).ok).toBe(false);
      }
    });
  });
});

describe("cardSize", () => {
  const withText = (content: string) => card([md(content)]);
  const extra = (content: string) => cardSize(withText(content)) - cardSize(withText(""));

  it("measures the card exactly as it travels: a JSON string inside the request body, in UTF-8 bytes", () => {
    const c = card([md('**进度** "3/10" \\ 完成')], { header: { title: plain("任务"), template: "blue" } });
    const body = JSON.stringify({ content: JSON.stringify(c) });
    const wrapper = Buffer.byteLength(JSON.stringify({ content: "" }), "utf8") - 2; // minus the ""
    expect(cardSize(c)).toBe(Buffer.byteLength(body, "utf8") - wrapper);
  });

  it("counts a Chinese character as 3 bytes and an ASCII letter as 1", () => {
    expect(extra("a")).toBe(1);
    expect(extra("中")).toBe(3);
    expect(extra("中文字符")).toBe(12);
    expect(extra("😀")).toBe(4);
  });

  it("counts a quote or a backslash as 4 bytes: escaped once in the card, and once more in the body", () => {
    expect(extra('"')).toBe(4);
    expect(extra("\\")).toBe(4);
    expect(extra("\n")).toBe(3);
  });

  it("is larger than JSON.stringify(card).length for a card with many quotes", () => {
    const quoted = withText('"'.repeat(1000));
    expect(cardSize(quoted)).toBeGreaterThanOrEqual(JSON.stringify(quoted).length + 2000);
  });
});

describe("countComponents", () => {
  it("counts every object with a tag, including header texts, text tags and each option's plain_text", () => {
    const c = card(
      [
        md("x"), // 1
        form("ask0", [
          // form 1
          select("ask0_q0", { options: [option("0"), option("1"), option("2")] }), // select 1 + placeholder 1 + 3
          submit("ask0_submit"), // button 1 + text 1
        ]),
        columns([button()]), // column_set 1 + column 1 + button 1 + text 1
      ],
      {
        header: {
          title: plain("任务"), // 1
          template: "blue",
          text_tag_list: [{ tag: "text_tag", text: plain("执行中"), color: "blue" }], // 2
        },
      },
    );
    expect(countComponents(c)).toBe(1 + 1 + 5 + 2 + 4 + 1 + 2);
  });

  it("ignores untagged objects (options, behaviors, config) and non-objects", () => {
    expect(countComponents(card([]))).toBe(0);
    expect(countComponents({ options: [{ value: "0" }], behaviors: [{ type: "callback" }] })).toBe(0);
    expect(countComponents(null)).toBe(0);
    expect(countComponents("markdown")).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Cards from buildProgressCard at the worst the ask schema allows.
// ---------------------------------------------------------------------------------------------------------

const SESSION = "feishu-cli_a1b2c3d4e5f6-group-oc_0123456789abcdef0123456789abcdef";
const SENDER = "ou_0123456789abcdef0123456789abcdef";

function view(patch: Partial<ProgressView> = {}): ProgressView {
  return {
    sessionId: SESSION,
    runId: "run_0001",
    senderId: SENDER,
    title: "帮我给新服务选一个部署方案",
    status: "running",
    steps: [{ title: "扫描工作区", status: "done", summary: "扫描了 42 个文件" }],
    startedAt: 0,
    detailsUrl: `http://localhost:3000/sessions/${SESSION}`,
    ...patch,
  };
}

/** `length` CJK ideographs (3 UTF-8 bytes each, 1 UTF-16 unit each); `salt` makes the text differ. */
function cjk(length: number, salt: number): string {
  return Array.from({ length }, (_, i) =>
    String.fromCodePoint(0x4e00 + ((salt * 977 + i * 13) % 20000)),
  ).join("");
}

/** One question with every text at the schema's maximum length, in Chinese. */
function worstQuestion(askIndex: number, j: number, multiSelect: boolean): AskQuestion {
  return {
    question: cjk(LIMITS.maxQuestionChars, 100 + askIndex * 4 + j),
    header: cjk(LIMITS.maxHeaderChars, 200 + j),
    multiSelect,
    options: Array.from({ length: LIMITS.maxOptions }, (_, k) => ({
      label: cjk(LIMITS.maxLabelChars, 300 + k),
      description: cjk(LIMITS.maxDescriptionChars, 400 + j * 4 + k),
      preview: cjk(LIMITS.maxPreviewChars, 500 + j * 4 + k),
    })),
  };
}

function worstAsks(multiSelect: boolean): CardAsk[] {
  return Array.from({ length: 4 }, (_, a) => ({
    requestId: `req_${String(a).padStart(4, "0")}_${"x".repeat(40)}`,
    questions: Array.from({ length: LIMITS.maxQuestions }, (_, j) => worstQuestion(a, j, multiSelect)),
  }));
}

function manySteps(count: number): ProgressView["steps"] {
  return Array.from({ length: count }, (_, i) => ({
    title: `#${i}# ${cjk(300, i)}`,
    status: i === count - 1 ? "running" : i % 50 === 7 ? "failed" : "done",
    summary: `"${cjk(1000, i + 7)}"`,
  }));
}

/** Every node below `nodes`, depth first. */
function walk(nodes: readonly CardNode[]): CardNode[] {
  return nodes.flatMap((node) => {
    const children =
      node.tag === "form" || node.tag === "collapsible_panel"
        ? node.elements
        : node.tag === "column_set"
          ? node.columns.flatMap((column) => column.elements)
          : [];
    return [node, ...walk(children)];
  });
}

/** Every markdown text in the card, including markdown panel titles. */
function markdownTexts(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(markdownTexts);
  if (typeof value !== "object" || value === null) return [];
  const own =
    (value as { tag?: unknown }).tag === "markdown" && typeof (value as Json).content === "string"
      ? [(value as { content: string }).content]
      : [];
  return [...own, ...Object.values(value).flatMap(markdownTexts)];
}

const formsOf = (c: Card) => c.body.elements.filter((node): node is FormNode => node.tag === "form");
const panelsOf = (c: Card) => walk(c.body.elements).filter((node) => node.tag === "collapsible_panel");

function stepsText(c: Card): string {
  const steps = markdownTexts(c).find((text) => text.startsWith(strings.card.stepsHeading));
  if (steps === undefined) throw new Error("no steps markdown in the card");
  return steps;
}

/** The step lines shown (one per step, each starting with its status icon). */
const stepLines = (c: Card) =>
  stepsText(c)
    .split("\n")
    .filter((line) => /^(✅|❌|⏳) /u.test(line));

function expectValidAndWithinLimits(c: Card): void {
  const check = validateCard(c);
  expect(check.ok ? "ok" : check.problems).toBe("ok");
  expect(check.ok).toBe(true);
  // The builder's own aim, with headroom under the platform's 30 KB (whose counting is undocumented).
  expect(cardSize(c)).toBeLessThanOrEqual(CARD_LIMITS.targetBytes);
  expect(countComponents(c)).toBeLessThanOrEqual(CARD_LIMITS.maxComponents);
}

/**
 * Every ask's fields are still on the card with one submit, and names are unique across the card. Two or more
 * question asks share one form (`asks`) whose one submit lists them (`0:req 1:req`, form-fields.ts); one ask
 * keeps its own form `ask0`.
 */
function expectEveryFormComplete(c: Card, asks: readonly CardAsk[]): void {
  const forms = formsOf(c);
  const stacked = asks.length > 1;
  expect(forms.map((f) => f.name)).toEqual(stacked ? ["asks"] : ["ask0"]);
  const inside = walk(forms.flatMap((f) => f.elements));
  asks.forEach((ask, i) => {
    ask.questions.forEach((question, j) => {
      const choice = inside.find((node) => "name" in node && node.name === `ask${i}_q${j}`);
      expect(choice?.tag).toBe(question.multiSelect ? "multi_select_static" : "select_static");
      if (choice?.tag === "select_static" || choice?.tag === "multi_select_static") {
        expect(choice.options.map((o) => o.value)).toEqual(question.options.map((_, k) => String(k)));
        expect(choice.options.every((o) => o.text.content.length > 0)).toBe(true);
      }
      const other = inside.find((node) => "name" in node && node.name === `ask${i}_c${j}`);
      expect(other?.tag).toBe("input");
    });
  });
  const submits = inside.filter((node) => node.tag === "button" && node.form_action_type === "submit");
  expect(submits).toHaveLength(1);
  const submitButton = submits[0];
  expect(submitButton?.tag === "button" && submitButton.behaviors).toEqual([
    {
      type: "callback",
      value: {
        kind: "feishu_ask",
        act: "submit",
        sessionId: SESSION,
        requestId: asks[0]?.requestId,
        sender: SENDER,
        ...(stacked ? { stack: asks.map((ask, i) => `${i}:${ask.requestId}`).join(" ") } : {}),
      },
    },
  ]);
}

describe("buildProgressCard at its worst", () => {
  it("uses fixtures that the ask schema accepts, at its maximum lengths, in 3-byte characters", () => {
    for (const multiSelect of [false, true]) {
      for (const ask of worstAsks(multiSelect)) {
        expect(parseAskInput({ questions: ask.questions }).ok).toBe(true);
        expect(ask.questions).toHaveLength(LIMITS.maxQuestions);
        for (const q of ask.questions) {
          expect(q.question).toHaveLength(LIMITS.maxQuestionChars);
          expect(q.options).toHaveLength(LIMITS.maxOptions);
          for (const o of q.options) {
            expect(o.label).toHaveLength(LIMITS.maxLabelChars);
            expect(o.description).toHaveLength(LIMITS.maxDescriptionChars);
            expect(o.preview).toHaveLength(LIMITS.maxPreviewChars);
            expect(Buffer.byteLength(o.preview ?? "", "utf8")).toBe(3 * LIMITS.maxPreviewChars);
          }
        }
      }
    }
  });

  it.each([
    ["single-select with previews", false],
    ["multi-select", true],
  ])("fits 4 asks × 4 questions × 4 options, all at maximum length, %s", (_kind, multiSelect) => {
    const asks = worstAsks(multiSelect);
    const c = buildProgressCard(view(), asks);
    expectValidAndWithinLimits(c);
    expectEveryFormComplete(c, asks);
    expect(c.config.summary?.content).toBe(strings.card.summaryWaiting(16));
  });

  it("fits 500 steps with long titles and summaries, showing only the latest few and how many came before", () => {
    const steps = manySteps(500);
    const c = buildProgressCard(view({ steps }), []);
    expectValidAndWithinLimits(c);
    const lines = stepLines(c);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(10);
    expect(stepsText(c)).toContain(strings.card.earlierSteps(500 - lines.length));
    // A leading `#` is escaped (it could start a heading): `&#35;12#`.
    const shown = lines.map((line) => Number(/(?:#|&#35;)(\d+)#/.exec(line)?.[1]));
    expect(shown).toEqual(Array.from({ length: lines.length }, (_, k) => 500 - lines.length + k));
    for (const line of lines) expect([...line].length).toBeLessThan(200);
  });

  it("fits a completed run with a 100,000-character answer, ending with the truncation marker", () => {
    const text = `**结论** 已完成部署。\n\n${cjk(100_000, 9)}`;
    const c = buildProgressCard(
      view({ status: "completed", steps: manySteps(30), text, endedAt: 3_600_000 }),
      worstAsks(false),
    );
    expectValidAndWithinLimits(c);
    expect(formsOf(c)).toEqual([]);
    const result = markdownTexts(c).find((t) => t.startsWith(strings.card.resultHeading));
    expect(result).toBeDefined();
    expect(result).toContain("**结论** 已完成部署。");
    expect(result?.endsWith(strings.card.truncated)).toBe(true);
  });

  it("fits a failed run with a huge error, ending with the truncation marker", () => {
    const error = `连接构建服务失败 "<&>" ${cjk(200_000, 11)}`;
    const c = buildProgressCard(view({ status: "failed", steps: manySteps(500), error, endedAt: 5_000 }), []);
    expectValidAndWithinLimits(c);
    const shown = markdownTexts(c).find((t) => t.startsWith(strings.card.errorHeading));
    expect(shown).toContain('连接构建服务失败 "&#60;&#38;&#62;"');
    expect(shown?.endsWith(strings.card.truncated)).toBe(true);
    expect([...(c.config.summary?.content ?? "")].length).toBeLessThanOrEqual(60);
  });

  it.each([
    ["single-select with previews", false],
    ["multi-select", true],
  ])(
    "fits everything at once: 500 steps, 4×4×4 asks (%s), a long streamed text and a long title",
    (_kind, multiSelect) => {
      const asks = worstAsks(multiSelect);
      const c = buildProgressCard(
        view({ title: cjk(1000, 3), steps: manySteps(500), text: cjk(100_000, 5) }),
        asks,
      );
      expectValidAndWithinLimits(c);
      expectEveryFormComplete(c, asks);
      expect(stepsText(c)).toContain("…前面还有");
    },
  );

  // BUG (src/cards/progress.ts buildProgressCard): text of control characters is schema-valid, and each one
  // costs 7 bytes on the wire (`\\u001b`), more than the ladder plans for. With 4×4×4 multi-select asks at
  // maximum length the last rung still leaves ~30.9 KB, so an over-limit card comes back.
  it("fits 4×4×4 multi-select asks whose texts are control characters (7 bytes each as sent)", () => {
    const esc = (prefix: string, max: number) => prefix + "\u001b".repeat(max - prefix.length);
    const asks: CardAsk[] = Array.from({ length: 4 }, (_, a) => ({
      requestId: `req_${a}`,
      questions: Array.from({ length: 4 }, (_, j) => ({
        question: esc(`q${a}${j}`, LIMITS.maxQuestionChars),
        header: esc("h", LIMITS.maxHeaderChars),
        multiSelect: true,
        options: Array.from({ length: 4 }, (_, k) => ({
          label: esc(`l${k}`, LIMITS.maxLabelChars),
          description: esc("d", LIMITS.maxDescriptionChars),
        })),
      })),
    }));
    for (const ask of asks) expect(parseAskInput({ questions: ask.questions }).ok).toBe(true);
    const c = buildProgressCard(view(), asks);
    expectValidAndWithinLimits(c);
    expectEveryFormComplete(c, asks);
  });
});

describe("buildProgressCard degradation order", () => {
  // The order is one language's: a bilingual card falls back to its own ladder (cards/i18n.ts).
  const build = (view: ProgressView, asks: CardAsk[], options: BuildOptions = {}) =>
    buildProgressCard(view, asks, { strings, ...options });
  const previewed: CardAsk = {
    requestId: "req_m",
    questions: [
      {
        question: "新服务要用哪种方式部署?",
        header: "部署",
        multiSelect: false,
        options: [
          { label: "Docker", description: cjk(300, 1), preview: cjk(800, 2) },
          { label: "裸机", description: cjk(300, 3), preview: cjk(800, 4) },
        ],
      },
    ],
  };
  const withoutPreviews: CardAsk = {
    ...previewed,
    questions: previewed.questions.map((q) => ({
      ...q,
      options: q.options.map(({ preview: _drop, ...o }) => o),
    })),
  };
  const steps = Array.from({ length: 20 }, (_, i) => ({
    title: `#${i}# ${cjk(60, i)}`,
    status: "done" as const,
    summary: cjk(80, i + 50),
  }));
  const v = view({ steps });
  const limitsOf = (maxBytes: number) => ({ maxBytes, maxComponents: CARD_LIMITS.maxComponents });
  const questionText = (c: Card) =>
    markdownTexts(formsOf(c)).find((t) => t.includes("新服务要用哪种方式部署?"));

  it("renders everything when nothing needs trimming", () => {
    const full = build(v, [previewed]);
    expectValidAndWithinLimits(full);
    expect(panelsOf(full)).toHaveLength(1);
    expect(stepLines(full).length).toBeGreaterThan(3);
    expect(questionText(full)).toContain(cjk(300, 1));
  });

  it("drops old steps first and keeps the previews when only a little trimming is needed", () => {
    const full = build(v, [previewed]);
    const limit = cardSize(full) - 1;
    const trimmed = build(v, [previewed], { limits: limitsOf(limit) });
    expect(cardSize(trimmed)).toBeLessThanOrEqual(limit);
    expect(stepLines(trimmed).length).toBeLessThan(stepLines(full).length);
    expect(stepLines(trimmed).length).toBeGreaterThan(0);
    expect(stepsText(trimmed)).toContain(strings.card.earlierSteps(20 - stepLines(trimmed).length));
    const panels = panelsOf(trimmed);
    expect(panels).toHaveLength(1);
    expect(JSON.stringify(panels[0])).toContain(cjk(800, 2));
    expect(questionText(trimmed)).toContain(cjk(300, 1));
    expectEveryFormComplete(trimmed, [previewed]);
  });

  it("drops the previews before it shortens any description", () => {
    const limit = cardSize(build(v, [withoutPreviews], { maxStepsShown: 1 }));
    // Even with a single step left, the previews do not fit under this limit…
    expect(cardSize(build(v, [previewed], { maxStepsShown: 1 }))).toBeGreaterThan(limit);
    const trimmed = build(v, [previewed], { limits: limitsOf(limit) });
    expect(cardSize(trimmed)).toBeLessThanOrEqual(limit);
    // …so they are gone, while every description is still whole.
    expect(panelsOf(trimmed)).toEqual([]);
    expect(JSON.stringify(trimmed)).not.toContain(cjk(800, 2));
    expect(questionText(trimmed)).toContain(cjk(300, 1));
    expect(questionText(trimmed)).toContain(cjk(300, 3));
    expectEveryFormComplete(trimmed, [previewed]);
  });

  it("shortens descriptions only once the previews are gone, and still keeps every field", () => {
    const limit = cardSize(build(v, [withoutPreviews], { maxStepsShown: 1 })) - 1;
    const trimmed = build(v, [previewed], { limits: limitsOf(limit) });
    expect(cardSize(trimmed)).toBeLessThanOrEqual(limit);
    expect(panelsOf(trimmed)).toEqual([]);
    const text = questionText(trimmed) ?? "";
    expect(text).not.toContain(cjk(300, 1));
    expect(text).toContain(cjk(20, 1));
    expectEveryFormComplete(trimmed, [previewed]);
  });
});

describe("buildProgressCard text safety", () => {
  const AT = "<at id=all></at>";
  const mentionAsk: CardAsk = {
    requestId: "req_at",
    questions: [
      {
        question: `要通知大家吗${AT}?`,
        header: "<at id=all>",
        multiSelect: false,
        options: [
          { label: `通知${AT}`, description: `发给所有人${AT}`, preview: "```\nok\n```" },
          { label: "不通知", description: "安静完成" },
        ],
      },
      {
        question: "还要做什么?",
        header: "其他",
        multiSelect: true,
        options: [
          { label: `<person id=ou_x></person>`, description: "<AT ID=all></AT>" },
          { label: "无", description: "无" },
        ],
      },
    ],
  };

  function expectNoRawMention(c: Card): void {
    const texts = markdownTexts(c);
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) {
      expect(text).not.toMatch(/<at\b/i);
      expect(text).not.toMatch(/<person\b/i);
    }
  }

  it("escapes mentions in questions, headers, labels, descriptions, step titles and summaries", () => {
    const c = buildProgressCard(
      view({
        steps: [{ title: `部署${AT}`, status: "done", summary: `完成${AT}` }],
        text: `正在处理${AT}`,
      }),
      [mentionAsk],
    );
    expectValidAndWithinLimits(c);
    expectNoRawMention(c);
    const all = markdownTexts(c).join("\n");
    expect(all).toContain("要通知大家吗&#60;at id=all&#62;&#60;/at&#62;?");
    expect(all).toContain("**通知&#60;at id=all&#62;&#60;/at&#62;**");
    expect(stepsText(c)).toContain("部署&#60;at id=all&#62;&#60;/at&#62;");
  });

  it("escapes mentions in a failed run's error", () => {
    const c = buildProgressCard(view({ status: "failed", error: `构建失败${AT}`, endedAt: 1_000 }), []);
    expectValidAndWithinLimits(c);
    expectNoRawMention(c);
    expect(markdownTexts(c).join("\n")).toContain("构建失败&#60;at id=all&#62;&#60;/at&#62;");
  });

  it("neutralises mentions in the completed answer but keeps its markdown", () => {
    const text = `**重要** 已完成 ${AT} 请查看 <AT id=ou_1>张三</AT> 和 <person id=ou_2></person>\n\n- 第一项`;
    const c = buildProgressCard(view({ status: "completed", text, endedAt: 1_000 }), []);
    expectValidAndWithinLimits(c);
    expectNoRawMention(c);
    const result = markdownTexts(c).find((t) => t.startsWith(strings.card.resultHeading)) ?? "";
    expect(result).toContain("**重要** 已完成");
    expect(result).toContain("\n\n- 第一项");
    expect(result).toContain("&#60;at id=all&#62;&#60;/at&#62;");
  });
});
