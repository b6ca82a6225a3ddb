import { describe, expect, it } from "vitest";
import type { Card, CardNode, FormNode } from "../src/cards/model.ts";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { buildQueuedCard } from "../src/cards/queued.ts";
import { validateCard } from "../src/cards/rules.ts";
import { checkCard } from "../src/local/emulator/card-checker/index.ts";
import { sampleAsk } from "./fixtures.ts";

const view: ProgressView = {
  sessionId: "feishu-cli_x-private-ou_a",
  runId: "run1",
  senderId: "ou_a",
  title: "部署新服务",
  status: "running",
  steps: [{ title: "扫描工作区", status: "done", summary: "42 个文件" }],
  startedAt: 0,
  detailsUrl: "https://bot.example.com/sessions/s1",
};
const ask: CardAsk = { requestId: "req-1", questions: sampleAsk().questions };

/** Every node of the card, depth first, with whether it sits inside a form. */
function nodes(card: Card): { node: CardNode; inForm: boolean }[] {
  const out: { node: CardNode; inForm: boolean }[] = [];
  const walk = (list: readonly CardNode[], inForm: boolean) => {
    for (const node of list) {
      out.push({ node, inForm });
      if (node.tag === "form") walk(node.elements, true);
      if (node.tag === "collapsible_panel") walk(node.elements, inForm);
      if (node.tag === "column_set") for (const column of node.columns) walk(column.elements, inForm);
    }
  };
  walk(card.body.elements, false);
  return out;
}
const forms = (card: Card) => card.body.elements.filter((node): node is FormNode => node.tag === "form");
const buttonTexts = (card: Card, inForm: boolean) =>
  nodes(card)
    .filter((entry) => entry.node.tag === "button" && entry.inForm === inForm)
    .map((entry) => (entry.node.tag === "button" ? entry.node.text.content : ""));
/** Valid by the builder's own rules and by the emulator's independent checker (written from the docs). */
const valid = (card: Card) => {
  expect(validateCard(card)).toMatchObject({ ok: true });
  const verdict = checkCard(card);
  expect(verdict.ok ? "ok" : verdict.summary).toBe("ok");
};

describe("buildProgressCard", () => {
  it("renders a running task without questions: steps, 取消任务 and 会话详情, blue header, no form", () => {
    const card = buildProgressCard(view, []);
    valid(card);
    expect(card.config).toEqual({
      update_multi: true,
      width_mode: "fill",
      summary: {
        content: "执行中 · 已完成 1 步",
        i18n_content: { zh_cn: "执行中 · 已完成 1 步", en_us: "Running · 1 step done" },
      },
      locales: ["zh_cn", "en_us"],
    });
    expect(card.header).toMatchObject({ template: "blue", title: { content: "部署新服务" } });
    expect(card.header?.i18n_text_tag_list?.zh_cn?.[0]?.text.content).toBe("执行中");
    expect(forms(card)).toEqual([]);
    expect(buttonTexts(card, false)).toEqual(["取消任务", "会话详情"]);
    expect(JSON.stringify(card)).toContain("✅ 扫描工作区 · 42 个文件");
  });

  it("renders one form per ask with single- and multi-select fields exactly as DESIGN §4 says", () => {
    const card = buildProgressCard(view, [ask]);
    valid(card);
    expect(card.config.summary?.content).toBe("等待你回答 2 个问题");
    expect(card.header?.template).toBe("orange");
    const [form] = forms(card);
    expect(form?.name).toBe("ask0");
    const fields = form!.elements.filter(
      (node) => node.tag !== "markdown" && node.tag !== "collapsible_panel",
    );
    expect(fields.map((node) => [node.tag, "name" in node ? node.name : undefined])).toEqual([
      ["select_static", "ask0_q0"],
      ["input", "ask0_c0"],
      ["multi_select_static", "ask0_q1"],
      ["input", "ask0_c1"],
      ["button", "ask0_submit"],
    ]);
    for (const field of fields) if ("required" in field) expect(field.required).toBe(false);
    const single = fields[0]!;
    if (single.tag !== "select_static") throw new Error("expected select_static");
    expect(single.options).toEqual([
      { text: { tag: "plain_text", content: "Vue 3 (Recommended)" }, value: "0" },
      { text: { tag: "plain_text", content: "React" }, value: "1" },
    ]);
    const multi = fields[2]!;
    expect(multi.tag === "multi_select_static" && multi.selected_values).toEqual([]);
    const other = fields[1]!;
    expect(other.tag === "input" && other.placeholder.content).toBe("其他(可选)");
    const submit = fields[4]!;
    if (submit.tag !== "button") throw new Error("expected button");
    expect(submit.form_action_type).toBe("submit");
    expect(submit.behaviors).toEqual([
      {
        type: "callback",
        value: {
          kind: "feishu_ask",
          act: "submit",
          sessionId: view.sessionId,
          requestId: "req-1",
          sender: "ou_a",
        },
      },
    ]);
    const markdown = form!.elements.filter((node) => node.tag === "markdown").map((node) => node.content);
    // Two questions on the card: each numbered across the card, the numbers a reply uses (`1:2 2:…`).
    expect(markdown[0]).toContain("**1.【Framework】** Which framework should we use for the new module?");
    expect(markdown[1]).toContain("**2.【Features】**");
    expect(markdown[0]).toContain("- **Vue 3 (Recommended)**：Composition API + TypeScript");
    expect(markdown[1]).toContain("- **PDF export**：Generate PDF reports");
  });

  it("keeps the task buttons outside every form, and the requestId out of every name", () => {
    const card = buildProgressCard(view, [ask, { ...ask, requestId: "req-2" }]);
    expect(buttonTexts(card, false)).toEqual(["取消任务", "会话详情"]);
    // Stacked asks share one form and its one submit (ask-form.ts askForms).
    expect(buttonTexts(card, true)).toEqual(["全部提交"]);
    const names = nodes(card).flatMap((entry) =>
      "name" in entry.node && entry.node.name ? [entry.node.name] : [],
    );
    expect(names.some((name) => name.includes("req-"))).toBe(false);
  });

  it("stacks several asks in one form, with names unique across the card and each ask's id in its submit", () => {
    const card = buildProgressCard(view, [
      ask,
      { ...ask, requestId: "req-2" },
      { ...ask, requestId: "req-3" },
    ]);
    valid(card);
    expect(forms(card).map((form) => form.name)).toEqual(["asks"]);
    const names = nodes(card).flatMap((entry) =>
      "name" in entry.node && entry.node.name ? [entry.node.name] : [],
    );
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain("ask2_q1");
    expect(card.config.summary?.content).toBe("等待你回答 6 个问题");
    expect(JSON.stringify(forms(card)[0])).toContain('"stack":"0:req-1 1:req-2 2:req-3"');
  });

  it("shows previews folded under single-select questions only", () => {
    const multiWithPreview: CardAsk = {
      requestId: "req-m",
      questions: [
        {
          question: "Pick any?",
          header: "Any",
          multiSelect: true,
          options: [
            { label: "A", description: "a", preview: "SECRET-MULTI-PREVIEW" },
            { label: "B", description: "b" },
          ],
        },
      ],
    };
    const card = buildProgressCard(view, [ask, multiWithPreview]);
    valid(card);
    const panels = nodes(card).filter((entry) => entry.node.tag === "collapsible_panel");
    expect(panels).toHaveLength(1);
    expect(panels[0]?.inForm).toBe(true);
    expect(JSON.stringify(panels[0]?.node)).toContain("createApp()");
    expect(JSON.stringify(card)).not.toContain("SECRET-MULTI-PREVIEW");
  });

  it.each([
    [
      "completed",
      { text: "**done** here", endedAt: 61_000 },
      "green",
      "已完成",
      ["会话详情"],
      "**结果**\n**done** here",
    ],
    ["failed", { error: "boom", endedAt: 2_000 }, "red", "失败", ["重试", "会话详情"], "**失败原因**\nboom"],
    // Cancelled: said once, by the header's tag (the body's 任务已取消 repeated it).
    ["cancelled", { endedAt: 2_000 }, "grey", "已取消", ["重试", "会话详情"], "**步骤**"],
  ] as const)(
    "renders %s with no form even when asks are passed",
    (status, extra, template, tag, buttons, body) => {
      const card = buildProgressCard({ ...view, status, ...extra }, [ask]);
      valid(card);
      expect(forms(card)).toEqual([]);
      expect(card.header?.template).toBe(template);
      expect(card.header?.i18n_text_tag_list?.zh_cn?.[0]?.text.content).toBe(tag);
      expect(buttonTexts(card, false)).toEqual(buttons);
      expect(JSON.stringify(card)).toContain(JSON.stringify(body).slice(1, -1));
      expect(card.header?.subtitle?.content).toMatch(/^用时 /);
    },
  );

  it("asks before 取消任务 goes out: the button carries the client's confirm dialog, which the checker accepts", () => {
    const card = buildProgressCard(view, [ask], { locales: ["zh_cn", "en_us"] });
    valid(card);
    const cancel = nodes(card).find(
      (entry) => entry.node.tag === "button" && entry.node.text.content === "取消任务",
    )?.node;
    expect(cancel?.tag === "button" && cancel.confirm).toEqual({
      title: {
        tag: "plain_text",
        content: "取消任务？",
        i18n_content: { zh_cn: "取消任务？", en_us: "Cancel the task?" },
      },
      text: {
        tag: "plain_text",
        content: "任务会停止，等待中的问题也会失效。",
        i18n_content: {
          zh_cn: "任务会停止，等待中的问题也会失效。",
          en_us: "The task stops, and its open questions close.",
        },
      },
    });
  });

  it("says a cancelled task was cancelled once: the header's tag, not again in the body", () => {
    const card = buildProgressCard(
      { ...view, status: "cancelled", endedAt: 2_000, notice: { kind: "cancelled" } },
      [],
      { strings: undefined },
    );
    valid(card);
    const { config: _summary, ...shown } = card;
    const mentions = JSON.stringify(shown).match(/已取消|任务已取消|问题已失效/g) ?? [];
    // The header's zh_cn tag list (i18n_text_tag_list): one text on screen.
    expect(mentions).toEqual(["已取消"]);
  });

  it("names whom a group card's question step waits for, since the whole chat reads it", () => {
    const asking = {
      ...view,
      chatType: "group" as const,
      steps: [
        {
          tool: "ask_user_questions",
          title: "等待你的回答",
          status: "running" as const,
          words: { title: { zh_cn: "等待你的回答", en_us: "Waiting for your answer" } },
        },
      ],
    };
    const text = JSON.stringify(buildProgressCard(asking, [ask]));
    expect(text).toContain("⏳ 等待 <at id=ou_a></at> 回答");
    expect(text).not.toContain("等待你的回答");
    expect(JSON.stringify(buildProgressCard({ ...asking, chatType: undefined }, [ask]))).toContain(
      "⏳ 等待你的回答",
    );
  });

  it("renders the recovery state with 任务正在恢复执行 and no form", () => {
    const card = buildProgressCard({ ...view, status: "recovering" }, [ask]);
    valid(card);
    expect(forms(card)).toEqual([]);
    expect(card.config.summary?.content).toBe("任务正在恢复执行");
    expect(JSON.stringify(card)).toContain("任务正在恢复执行");
    expect(buttonTexts(card, false)).toEqual(["取消任务", "会话详情"]);
  });

  it("carries sessionId, runId and sender in the task buttons", () => {
    const card = buildProgressCard({ ...view, status: "failed", error: "x", endedAt: 1 }, []);
    const retry = nodes(card).find(
      (entry) => entry.node.tag === "button" && entry.node.text.content === "重试",
    );
    expect(retry?.node.tag === "button" && retry.node.behaviors[0]).toEqual({
      type: "callback",
      value: { kind: "progress", act: "retry", sessionId: view.sessionId, runId: "run1", sender: "ou_a" },
    });
  });

  it("omits the 会话详情 button when there is no link", () => {
    const { detailsUrl: _omit, ...noLink } = view;
    expect(
      buttonTexts(buildProgressCard({ ...noLink, status: "completed", text: "ok", endedAt: 1 }, []), false),
    ).toEqual([]);
  });

  it("strips terminal colours and control characters that tool output brings along", () => {
    const noisy: ProgressView = {
      ...view,
      title: "\u001b[1m构建\u001b[0m",
      steps: [{ title: "\u001b[31mnpm test\u001b[0m", status: "failed", summary: "exit\u0007 1" }],
    };
    const json = JSON.stringify(buildProgressCard(noisy, []));
    expect(json).toContain("❌ npm test · exit 1");
    expect(json).toContain('"content":"构建"');
    expect(json).not.toMatch(/\\u00(1b|07)/);
  });

  it("is a pure function: the same input renders the same card", () => {
    expect(buildProgressCard(view, [ask])).toEqual(buildProgressCard(view, [ask]));
  });
});

describe("buildQueuedCard", () => {
  const queued = {
    sessionId: "s1",
    queueId: "q1",
    senderId: "ou_a",
    text: "再跑一遍 <at id=all></at>",
    position: 2,
    state: "queued" as const,
  };

  it("shows the place in the queue with 插队 and 取消排队 carrying the queue id and sender", () => {
    const card = buildQueuedCard(queued);
    valid(card);
    expect(JSON.stringify(card)).toContain("排在第 2 位");
    expect(JSON.stringify(card)).not.toContain("<at");
    const buttons = nodes(card).flatMap((entry) => (entry.node.tag === "button" ? [entry.node] : []));
    expect(buttons.map((button) => button.text.content)).toEqual(["插队", "取消排队"]);
    expect(buttons[0]?.behaviors[0]).toEqual({
      type: "callback",
      value: { kind: "queue", act: "promote", sessionId: "s1", queueId: "q1", sender: "ou_a" },
    });
  });

  it("drops 插队 for the message already first in line, and every button once it started or was withdrawn", () => {
    const texts = (card: Card) =>
      nodes(card).flatMap((entry) => (entry.node.tag === "button" ? [entry.node.text.content] : []));
    expect(texts(buildQueuedCard({ ...queued, position: 1 }))).toEqual(["取消排队"]);
    expect(texts(buildQueuedCard({ ...queued, state: "started" }))).toEqual([]);
    expect(texts(buildQueuedCard({ ...queued, state: "withdrawn" }))).toEqual([]);
  });
});
