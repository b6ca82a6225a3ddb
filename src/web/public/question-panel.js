/**
 * The web QuestionPanel (seed ask-user-questions-design §4): one panel per pending ask.
 *
 * The top half is pure — the answer state of each question, the Submit rule and the answers it sends — and
 * runs in Node too (test/session-page.test.ts imports it). The bottom half builds the panel's DOM from a
 * `document` it is given; every piece of question text goes in through `textContent`, never as HTML.
 * Types: question-panel.d.ts.
 */

/** Longest "其他" text the server keeps (asks/schema.ts LIMITS.maxCustomInputChars). */
export const MAX_CUSTOM_INPUT_CHARS = 1000;

export const TEXT = {
  heading: "需要你的回答",
  headingOf: (index, total) => `需要你的回答（${index}/${total}）`,
  single: "单选",
  multi: "可多选",
  other: "其他",
  otherPlaceholder: "输入你自己的回答…",
  submit: "提交",
  submitting: "提交中…",
  readOnly: "仅任务发起人可以回答",
  previewTitle: "预览",
  previewEmpty: "选择或悬停一个选项以查看预览",
  previewNone: "此选项没有预览",
};

// ---------------------------------------------------------------------------------------------------------
// Pure logic

/** Nothing chosen, nothing typed, for every question. */
export function emptyState(questions) {
  return questions.map(() => ({ selected: [], other: "" }));
}

/**
 * Ticks (`checked`) or unticks an option. Single-select: choosing an option replaces the choice and clears
 * "其他" (seed §4.4). Multi-select: toggles the option and keeps "其他". Labels stay in the options' order.
 */
export function selectOption(question, state, label, checked = true) {
  if (!question.options.some((option) => option.label === label)) return state;
  if (!checked) return { ...state, selected: state.selected.filter((chosen) => chosen !== label) };
  if (!question.multiSelect) return { selected: [label], other: "" };
  if (state.selected.includes(label)) return state;
  const selected = new Set([...state.selected, label]);
  return {
    ...state,
    selected: question.options.map((option) => option.label).filter((known) => selected.has(known)),
  };
}

/** Types into "其他". Single-select: non-blank text clears the choice (seed §4.4); multi-select keeps it. */
export function typeOther(question, state, text) {
  if (!question.multiSelect && text.trim() !== "") return { selected: [], other: text };
  return { ...state, other: text };
}

/** A question counts as answered with a choice or non-blank "其他" text (seed decision #4). */
export function isAnswered(state) {
  return state.selected.length > 0 || state.other.trim() !== "";
}

/**
 * Submit is enabled only when every question is answered, the viewer may answer (the run's sender),
 * and no answer from this panel is on its way.
 */
export function canSubmit(questions, states, flags = {}) {
  const { canAnswer = true, busy = false } = flags;
  if (!canAnswer || busy) return false;
  return questions.length > 0 && states.length === questions.length && states.every(isAnswered);
}

/**
 * The `answers` of an `ask_user_questions_result` frame: one per question, in order, `question` copied.
 * Single-select: non-blank "其他" wins and the choice is dropped; multi-select: choices and text both go.
 * Blank text is `null`, as the server's normalizeAnswer (asks/answers.ts) treats it.
 */
export function collectAnswers(questions, states) {
  return questions.map((question, index) => {
    const state = states[index] ?? { selected: [], other: "" };
    const text = state.other.trim();
    const customInput = text === "" ? null : [...text].slice(0, MAX_CUSTOM_INPUT_CHARS).join("");
    const selectedLabels = question.multiSelect
      ? [...state.selected]
      : customInput !== null
        ? []
        : state.selected.slice(0, 1);
    return { question: question.question, selectedLabels, customInput };
  });
}

/** Side-by-side preview layout: single-select questions with at least one option preview (seed §4.4). */
export function hasPreview(question) {
  return (
    !question.multiSelect &&
    question.options.some((option) => typeof option.preview === "string" && option.preview.trim() !== "")
  );
}

/**
 * What the preview pane shows: the hovered option, else the chosen one; `text` is null when that option has
 * no preview, and `label` is null when nothing is chosen or hovered.
 */
export function previewFor(question, state, hoveredLabel = null) {
  if (!hasPreview(question)) return { label: null, text: null };
  const label = hoveredLabel ?? state.selected[0] ?? null;
  const option = question.options.find((candidate) => candidate.label === label);
  if (!option) return { label: null, text: null };
  const preview = typeof option.preview === "string" && option.preview.trim() !== "" ? option.preview : null;
  return { label: option.label, text: preview === null ? null : unfence(preview) };
}

/** A preview that is one fenced code block shows as its code (it is displayed as code anyway). */
export function unfence(preview) {
  const match = /^\s*(`{3,}|~{3,})[^\n]*\n([\s\S]*?)\n?\1\s*$/.exec(preview);
  return match ? (match[2] ?? "") : preview;
}

// ---------------------------------------------------------------------------------------------------------
// DOM

/**
 * Builds one panel for `ask` (`{requestId, questions}`). `options.onSubmit(answers)` sends them;
 * the caller reports back with `setBusy`, `showError`, `markStale`, and removes `element` when the ask settles.
 */
export function createAskPanel(doc, ask, options = {}) {
  const questions = ask.questions;
  const states = emptyState(questions);
  let canAnswer = options.canAnswer ?? true;
  let busy = false;
  let stale = false;
  const hovered = questions.map(() => null);
  const el = (tag, attrs = {}, text) => {
    const node = doc.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  };

  const root = el("section", {
    class: "ask-panel",
    "data-testid": "ask-panel",
    "data-request-id": ask.requestId,
  });
  const title = el("h2", { class: "ask-title" }, TEXT.heading);
  const readOnly = el("p", { class: "read-only-note", "data-testid": "read-only-note" }, TEXT.readOnly);
  root.append(title, readOnly);

  const views = questions.map((question, index) => {
    const name = `ask-${ask.requestId}-q${index}`;
    const withPreview = hasPreview(question);
    const box = el("div", {
      class: withPreview ? "question has-preview" : "question",
      "data-testid": "question",
      "data-index": index,
      "data-multi": question.multiSelect,
    });
    const main = el("div", { class: "question-main" });
    const head = el("div", { class: "question-head" });
    head.append(
      el("span", { class: "chip", "data-testid": "question-header" }, question.header),
      el("span", { class: "hint" }, question.multiSelect ? TEXT.multi : TEXT.single),
    );
    const text = el("p", { class: "question-text", "data-testid": "question-text" }, question.question);
    const list = el("div", { class: "options", role: question.multiSelect ? "group" : "radiogroup" });
    const inputs = question.options.map((option, optionIndex) => {
      const row = el("label", { class: "option", "data-testid": "option", "data-label": option.label });
      const input = el("input", {
        type: question.multiSelect ? "checkbox" : "radio",
        name,
        value: optionIndex,
        "data-testid": "option-input",
      });
      const body = el("span", { class: "option-body" });
      body.append(
        el("span", { class: "option-label" }, option.label),
        el("span", { class: "option-desc" }, option.description),
      );
      row.append(input, body);
      input.addEventListener("change", () => {
        states[index] = selectOption(question, states[index], option.label, input.checked);
        sync();
      });
      if (withPreview) {
        const enter = () => {
          hovered[index] = option.label;
          syncPreview(index);
        };
        const leave = () => {
          hovered[index] = null;
          syncPreview(index);
        };
        row.addEventListener("mouseenter", enter);
        row.addEventListener("mouseleave", leave);
        input.addEventListener("focus", enter);
        input.addEventListener("blur", leave);
      }
      list.append(row);
      return input;
    });
    const otherRow = el("label", { class: "other" });
    const other = el("input", {
      type: "text",
      class: "other-input",
      "data-testid": "other-input",
      placeholder: TEXT.otherPlaceholder,
      maxlength: MAX_CUSTOM_INPUT_CHARS,
      autocomplete: "off",
    });
    otherRow.append(el("span", { class: "other-label" }, TEXT.other), other);
    other.addEventListener("input", () => {
      states[index] = typeOther(question, states[index], other.value);
      sync();
    });
    main.append(head, text, list, otherRow);
    box.append(main);
    let preview;
    if (withPreview) {
      const pane = el("aside", { class: "preview-pane", "data-testid": "preview-pane" });
      const caption = el(
        "div",
        { class: "preview-title", "data-testid": "preview-title" },
        TEXT.previewTitle,
      );
      const code = el("code");
      const pre = el("pre", { class: "preview", "data-testid": "preview" });
      pre.append(code);
      pane.append(caption, pre);
      box.append(pane);
      preview = { caption, pre, code };
    }
    root.append(box);
    return { question, inputs, other, preview };
  });

  const error = el("p", { class: "error-note", "data-testid": "error-note", role: "alert" });
  const submit = el("button", { type: "button", class: "submit", "data-testid": "submit" }, TEXT.submit);
  const actions = el("div", { class: "actions" });
  actions.append(submit);
  root.append(error, actions);
  error.hidden = true;

  submit.addEventListener("click", () => {
    if (!canSubmit(questions, states, { canAnswer, busy: busy || stale })) return;
    options.onSubmit?.(collectAnswers(questions, states));
  });

  function syncPreview(index) {
    const view = views[index];
    if (!view?.preview) return;
    const shown = previewFor(view.question, states[index], hovered[index]);
    view.preview.caption.textContent = shown.label
      ? `${TEXT.previewTitle} · ${shown.label}`
      : TEXT.previewTitle;
    view.preview.code.textContent =
      shown.label === null ? TEXT.previewEmpty : (shown.text ?? TEXT.previewNone);
    view.preview.pre.classList.toggle("empty", shown.text === null);
  }

  // The state is the truth; the inputs are redrawn from it after every change (radio cleared by 其他, …).
  function sync() {
    const locked = !canAnswer || busy || stale;
    views.forEach((view, index) => {
      const state = states[index];
      view.inputs.forEach((input, optionIndex) => {
        input.checked = state.selected.includes(view.question.options[optionIndex].label);
        input.disabled = locked;
      });
      if (view.other.value !== state.other) view.other.value = state.other;
      view.other.disabled = locked;
      syncPreview(index);
    });
    readOnly.hidden = canAnswer;
    root.classList.toggle("read-only", !canAnswer);
    submit.disabled = !canSubmit(questions, states, { canAnswer, busy: busy || stale });
    submit.textContent = busy ? TEXT.submitting : TEXT.submit;
  }

  sync();
  return {
    element: root,
    requestId: ask.requestId,
    setHeading(index, total) {
      title.textContent = total > 1 ? TEXT.headingOf(index, total) : TEXT.heading;
    },
    setCanAnswer(value) {
      canAnswer = value;
      sync();
    },
    setBusy(value) {
      busy = value;
      sync();
    },
    get busy() {
      return busy;
    },
    showError(message) {
      error.textContent = message ?? "";
      error.hidden = !message;
    },
    /** The ask is gone on the server (answered elsewhere, timed out): nothing here can be sent any more. */
    markStale(message) {
      stale = true;
      busy = false;
      this.showError(message);
      sync();
    },
  };
}
