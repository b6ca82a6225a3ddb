import { fill, type PageStrings } from "./page-text.ts";
import {
  canSubmit,
  collectAnswers,
  emptyState,
  hasPreview,
  MAX_CUSTOM_INPUT_CHARS,
  type PanelAnswer,
  type PanelQuestion,
  previewFor,
  type QuestionState,
  selectOption,
  typeOther,
} from "./question-panel.ts";

/**
 * The web QuestionPanel's DOM (seed ask-user-questions-design §4): one panel per pending ask, built from a
 * `document` it is given. Every piece of question text goes in through `textContent`, never as HTML. The
 * state and the rules are question-panel.ts; the inputs are redrawn from that state after every change.
 * Its words are the page's (`text`, the catalogue's `web.panel` in the bot's language).
 */

export interface AskPanel {
  readonly element: HTMLElement;
  readonly requestId: string;
  readonly busy: boolean;
  setHeading(index: number, total: number): void;
  setCanAnswer(value: boolean): void;
  setBusy(value: boolean): void;
  showError(message: string | null | undefined): void;
  /** The ask is gone on the server (answered elsewhere, timed out): nothing here can be sent any more. */
  markStale(message: string): void;
}

interface PreviewView {
  caption: HTMLElement;
  pre: HTMLElement;
  code: HTMLElement;
}

/**
 * Builds one panel for `ask` (`{requestId, questions}`). `options.onSubmit(answers)` sends them;
 * the caller reports back with `setBusy`, `showError`, `markStale`, and removes `element` when the ask settles.
 */
export function createAskPanel(
  doc: Document,
  ask: { requestId: string; questions: readonly PanelQuestion[] },
  options: {
    text: PageStrings["panel"];
    canAnswer?: boolean;
    onSubmit?: (answers: PanelAnswer[]) => void;
    /** With both: a 拒绝回答 button before 提交 (an outside agent's question); nothing needs filling in. */
    declineText?: string;
    onDecline?: () => void;
  },
): AskPanel {
  const TEXT = options.text;
  const questions = ask.questions;
  const states: QuestionState[] = emptyState(questions);
  let canAnswer = options.canAnswer ?? true;
  let busy = false;
  let stale = false;
  const hovered: (string | null)[] = questions.map(() => null);
  const stateOf = (index: number): QuestionState => states[index] ?? { selected: [], other: "" };
  const el = <K extends keyof HTMLElementTagNameMap>(
    tag: K,
    attrs: Record<string, string | number | boolean> = {},
    text?: string,
  ): HTMLElementTagNameMap[K] => {
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
        states[index] = selectOption(question, stateOf(index), option.label, input.checked);
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
      states[index] = typeOther(question, stateOf(index), other.value);
      sync();
    });
    main.append(head, text, list, otherRow);
    box.append(main);
    let preview: PreviewView | undefined;
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
  const decline =
    options.declineText && options.onDecline
      ? el(
          "button",
          { type: "button", class: "secondary-button", "data-testid": "decline" },
          options.declineText,
        )
      : undefined;
  if (decline) actions.append(decline);
  actions.append(submit);
  root.append(error, actions);
  error.hidden = true;

  decline?.addEventListener("click", () => {
    if (!canAnswer || busy || stale) return;
    options.onDecline?.();
  });

  submit.addEventListener("click", () => {
    if (!canSubmit(questions, states, { canAnswer, busy: busy || stale })) return;
    options.onSubmit?.(collectAnswers(questions, states));
  });

  function syncPreview(index: number): void {
    const view = views[index];
    if (!view?.preview) return;
    const shown = previewFor(view.question, stateOf(index), hovered[index] ?? null);
    view.preview.caption.textContent = shown.label
      ? fill(TEXT.previewOf, { label: shown.label })
      : TEXT.previewTitle;
    view.preview.code.textContent =
      shown.label === null ? TEXT.previewEmpty : (shown.text ?? TEXT.previewNone);
    view.preview.pre.classList.toggle("empty", shown.text === null);
  }

  // The state is the truth; the inputs are redrawn from it after every change (radio cleared by 其他, …).
  function sync(): void {
    const locked = !canAnswer || busy || stale;
    views.forEach((view, index) => {
      const state = stateOf(index);
      view.inputs.forEach((input, optionIndex) => {
        input.checked = state.selected.includes(view.question.options[optionIndex]?.label ?? "");
        input.disabled = locked;
      });
      if (view.other.value !== state.other) view.other.value = state.other;
      view.other.disabled = locked;
      syncPreview(index);
    });
    readOnly.hidden = canAnswer;
    root.classList.toggle("read-only", !canAnswer);
    submit.disabled = !canSubmit(questions, states, { canAnswer, busy: busy || stale });
    if (decline) {
      decline.disabled = locked;
      decline.hidden = !canAnswer;
    }
    submit.textContent = busy ? TEXT.submitting : TEXT.submit;
  }

  sync();
  return {
    element: root,
    requestId: ask.requestId,
    setHeading(index: number, total: number) {
      title.textContent = total > 1 ? fill(TEXT.headingOf, { index, total }) : TEXT.heading;
    },
    setCanAnswer(value: boolean) {
      canAnswer = value;
      sync();
    },
    setBusy(value: boolean) {
      busy = value;
      sync();
    },
    get busy() {
      return busy;
    },
    showError(message: string | null | undefined) {
      error.textContent = message ?? "";
      error.hidden = !message;
    },
    markStale(message: string) {
      stale = true;
      busy = false;
      this.showError(message);
      sync();
    },
  };
}
