import { BUTTON_TYPES as EMULATED_BUTTON_TYPES } from "../../emulator/card-checker/enums.ts";
import {
  buttonAction,
  type CardAction,
  callbackValue,
  collectFormValue,
  type FormField,
  type Json,
  list,
  missingRequired,
  record,
  safeUrl,
} from "./card-values.ts";
import { h } from "./dom.ts";
import type { ConsoleWords } from "./words.ts";

/**
 * The card's form controls and buttons as the Feishu client shows them (selects, inputs, buttons with their
 * 二次确认 dialog, submit and reset), and the readers every part of the renderer (cards.ts) shares. The card
 * is untrusted JSON: every field is read through these checks, never assumed to have a shape.
 */

const BUTTON_TYPES: ReadonlySet<string> = new Set(EMULATED_BUTTON_TYPES);
export interface RenderOptions {
  onAction?: (action: CardAction) => unknown;
  onNotice?: (message: string) => void;
  openUrl?: (url: string) => void;
  mentionName?: (openId: string) => string | undefined;
  /** The client's language: each text's `i18n_content` in it (default: each text's `content`). */
  locale?: string;
}

export interface Ctx extends Required<Omit<RenderOptions, "locale">> {
  form: HTMLFormElement | undefined;
  /** The language dates are written in (`<local_datetime>`). */
  locale: string | undefined;
  /** The client's own words (a confirm dialog's buttons), in its language. */
  chrome: { ok: string; cancel: string };
  /** The client's other words (placeholders it supplies, what it cannot show). */
  words: ConsoleWords;
}

export const text = (value: unknown): string => str(record(value)?.content) ?? "";
export const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
/** `value` when it is one of `allowed`, else `fallback`. */
export const oneOf = (
  value: unknown,
  allowed: ReadonlySet<string> | readonly string[],
  fallback: string,
): string =>
  typeof value === "string" && ("has" in allowed ? allowed.has(value) : allowed.includes(value))
    ? value
    : fallback;
export const nodes = (value: unknown): Json[] => list(value).map((node) => record(node) ?? {});
const optionValue = (option: Json): string =>
  option.value === undefined || option.value === null ? "" : String(option.value);
export function renderSelect(node: Json, ctx: Ctx): HTMLElement {
  const name = str(node.name) ?? "";
  const select = h("select", {
    class: `fc-select${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": "form-field",
    "data-tag": "select_static",
    "data-name": name,
    "data-required": node.required === true ? "true" : "false",
    "aria-label": text(node.placeholder) || name,
  });
  select.append(
    h("option", {
      value: "",
      disabled: true,
      selected: true,
      text: text(node.placeholder) || ctx.words.selectPlaceholder,
    }),
  );
  const options = nodes(node.options);
  // initial_option wins over initial_index (1-based, 0 = none), as the docs say.
  const initial =
    node.initial_option !== undefined
      ? options.findIndex((option) => option.value === node.initial_option)
      : typeof node.initial_index === "number" && Number.isInteger(node.initial_index)
        ? node.initial_index - 1
        : -1;
  options.forEach((option, index) => {
    const selected = index === initial;
    select.append(h("option", { value: optionValue(option), selected, text: text(option.text) }));
  });
  return select;
}

export function renderMultiSelect(node: Json, ctx: Ctx): HTMLElement {
  const chosen = new Set(list(node.selected_values));
  const box = h("fieldset", {
    class: `fc-multi${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": "form-field",
    "data-tag": "multi_select_static",
    "data-name": str(node.name) ?? "",
    "data-required": node.required === true ? "true" : "false",
  });
  box.append(
    h("legend", {
      class: "fc-multi-placeholder",
      text: text(node.placeholder) || ctx.words.multiPlaceholder,
    }),
  );
  for (const option of nodes(node.options)) {
    box.append(
      h(
        "label",
        { class: "fc-check" },
        h("input", { type: "checkbox", value: optionValue(option), checked: chosen.has(option.value) }),
        h("span", { text: text(option.text) }),
      ),
    );
  }
  return box;
}

export function renderInput(node: Json): HTMLElement {
  const name = str(node.name) ?? "";
  return h("input", {
    type: "text",
    class: `fc-input${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": "form-field",
    "data-tag": "input",
    "data-name": name,
    "data-required": node.required === true ? "true" : "false",
    placeholder: text(node.placeholder),
    maxlength:
      typeof node.max_length === "number" && Number.isInteger(node.max_length) ? node.max_length : 1000,
    value: str(node.default_value),
    "aria-label": text(node.placeholder) || name,
  });
}

/** The fields of one form as the pure helpers take them. */
export function readFormFields(form: ParentNode): FormField[] {
  return [...form.querySelectorAll<HTMLElement>('[data-testid="form-field"]')].map((element) => ({
    tag: element.dataset.tag ?? "",
    name: element.dataset.name ?? "",
    required: element.dataset.required === "true",
    ...(element.dataset.tag === "multi_select_static"
      ? { values: [...element.querySelectorAll<HTMLInputElement>("input:checked")].map((box) => box.value) }
      : {
          value:
            element instanceof HTMLInputElement || element instanceof HTMLSelectElement ? element.value : "",
        }),
  }));
}

/** The client's dialog before a button with `confirm` acts: resolves true on 确定, false on 取消 or Esc. */
function askToConfirm(title: string, body: string, ctx: Ctx): Promise<boolean> {
  const dialog = h("dialog", { class: "fc-confirm", "data-testid": "confirm-dialog" });
  const ok = h("button", {
    type: "button",
    class: "fc-btn fc-btn-primary fc-btn-medium",
    "data-testid": "confirm-ok",
    text: ctx.chrome.ok,
  });
  const cancel = h("button", {
    type: "button",
    class: "fc-btn fc-btn-default fc-btn-medium",
    "data-testid": "confirm-cancel",
    text: ctx.chrome.cancel,
  });
  dialog.append(
    h("div", { class: "fc-confirm-title", text: title }),
    h("div", { class: "fc-confirm-text", text: body }),
    h("div", { class: "fc-confirm-actions" }, cancel, ok),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    const close = (answer: boolean) => {
      dialog.remove();
      resolve(answer);
    };
    ok.addEventListener("click", () => close(true));
    cancel.addEventListener("click", () => close(false));
    dialog.addEventListener("cancel", () => close(false));
    dialog.showModal();
  });
}

function resetForm(form: ParentNode): void {
  for (const element of form.querySelectorAll<HTMLElement>('[data-testid="form-field"]')) {
    if (element.dataset.tag === "multi_select_static")
      for (const box of element.querySelectorAll("input")) box.checked = box.defaultChecked;
    else if (element instanceof HTMLSelectElement) element.selectedIndex = 0;
    else if (element instanceof HTMLInputElement) element.value = element.defaultValue;
  }
}

export function renderButton(node: Json, ctx: Ctx): HTMLElement {
  const type = oneOf(node.type, BUTTON_TYPES, "default");
  const size = oneOf(node.size, ["tiny", "small", "large"], "medium");
  const submits = node.form_action_type === "submit" && ctx.form !== undefined;
  const button = h("button", {
    type: "button",
    class: `fc-btn fc-btn-${type} fc-btn-${size}${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": submits ? "submit-button" : "card-button",
    "data-name": str(node.name) ?? "",
    disabled: node.disabled === true,
    text: text(node.text),
  });
  button.addEventListener("click", () => clickButton(node, button, ctx));
  return button;
}

async function clickButton(node: Json, button: HTMLButtonElement, ctx: Ctx): Promise<void> {
  if (node.form_action_type === "reset" && ctx.form) return resetForm(ctx.form);
  // 二次确认弹窗: the client asks first, and a "no" sends nothing (D-button `confirm`).
  const confirm = record(node.confirm);
  if (confirm && !(await askToConfirm(text(confirm.title), text(confirm.text), ctx))) return undefined;
  for (const behavior of nodes(node.behaviors)) {
    const url = behavior.type === "open_url" ? safeUrl(behavior.default_url ?? behavior.pc_url) : undefined;
    if (url) ctx.openUrl(url);
  }
  let action: CardAction;
  if (node.form_action_type === "submit" && ctx.form) {
    const fields = readFormFields(ctx.form);
    if (missingRequired(fields).length > 0) return ctx.onNotice(ctx.words.requiredMissing);
    action = buttonAction(node, collectFormValue(fields));
  } else if (callbackValue(node) !== undefined) {
    action = buttonAction(node);
  } else {
    return undefined;
  }
  button.classList.add("is-loading");
  button.disabled = true;
  try {
    await ctx.onAction(action);
  } finally {
    button.classList.remove("is-loading");
    button.disabled = node.disabled === true;
  }
  return undefined;
}
