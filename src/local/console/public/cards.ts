import { iconizeStatusEmoji } from "../../../web/public/icons.ts";
import { escapeHtml, inlineMarkdownToHtml, markdownToHtml } from "../../../web/public/markdown.ts";
import {
  buttonAction,
  type CardAction,
  callbackValue,
  collectFormValue,
  type FormField,
  type Json,
  list,
  localizeCard,
  missingRequired,
  record,
  resolveLocalDatetimes,
  resolveMentions,
  safeUrl,
} from "./card-values.ts";
import { h, setSafeHtml } from "./dom.ts";
import { CONSOLE_WORDS, type ConsoleWords, consoleLocale, isConsoleLocale } from "./words.ts";

/**
 * Renders Card JSON 2.0 (the subset in src/cards/model.ts, plus a few neighbours) the way the Feishu client
 * shows it. `renderCard(card, {onAction})` builds DOM; its pure helpers live in card-values.ts.
 * Nothing from a card reaches innerHTML except through markdownToHtml, which escapes all text. The card is
 * untrusted JSON: every field is read through the checks below, never assumed to have a shape.
 */

export type { CardAction, FormField } from "./card-values.ts";
export {
  buttonAction,
  callbackValue,
  cardPreview,
  collectFormValue,
  localizeCard,
  missingRequired,
  resolveMentions,
  safeUrl,
} from "./card-values.ts";
export { escapeHtml, inlineMarkdownToHtml, markdownToHtml };

const TEMPLATES = new Set([
  "blue",
  "wathet",
  "turquoise",
  "green",
  "yellow",
  "orange",
  "red",
  "carmine",
  "violet",
  "purple",
  "indigo",
  "grey",
  "default",
]);
const BUTTON_TYPES = new Set([
  "default",
  "primary",
  "danger",
  "text",
  "primary_text",
  "danger_text",
  "primary_filled",
  "danger_filled",
  "laser",
]);
const PX = /^(-?\d{1,3}px)( -?\d{1,3}px){0,3}$/;
const SPACING: Record<string, string> = { small: "4px", medium: "8px", large: "12px", extra_large: "16px" };

export interface RenderOptions {
  onAction?: (action: CardAction) => unknown;
  onNotice?: (message: string) => void;
  openUrl?: (url: string) => void;
  mentionName?: (openId: string) => string | undefined;
  /** The client's language: each text's `i18n_content` in it (default: each text's `content`). */
  locale?: string;
}

interface Ctx extends Required<Omit<RenderOptions, "locale">> {
  form: HTMLFormElement | undefined;
  /** The language dates are written in (`<local_datetime>`). */
  locale: string | undefined;
  /** The client's own words (a confirm dialog's buttons), in its language. */
  chrome: { ok: string; cancel: string };
  /** The client's other words (placeholders it supplies, what it cannot show). */
  words: ConsoleWords;
}

/** What a Feishu client writes on a 二次确认弹窗's buttons, by its language. */
const DIALOG_BUTTONS: Record<string, { ok: string; cancel: string }> = {
  zh_cn: { ok: "确定", cancel: "取消" },
  en_us: { ok: "Confirm", cancel: "Cancel" },
};

const text = (value: unknown): string => str(record(value)?.content) ?? "";
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
/** `value` when it is one of `allowed`, else `fallback`. */
const oneOf = (value: unknown, allowed: ReadonlySet<string> | readonly string[], fallback: string): string =>
  typeof value === "string" && ("has" in allowed ? allowed.has(value) : allowed.includes(value))
    ? value
    : fallback;
const nodes = (value: unknown): Json[] => list(value).map((node) => record(node) ?? {});
const optionValue = (option: Json): string =>
  option.value === undefined || option.value === null ? "" : String(option.value);
const spacing = (value: unknown): string | undefined =>
  typeof value !== "string" ? undefined : (SPACING[value] ?? (PX.test(value) ? value : undefined));

/** Card JSON 2.0 → DOM. Anything else shows as an unsupported card. */
export function renderCard(input: unknown, options: RenderOptions = {}): HTMLElement {
  // A client shows one language: the console's switch picks which.
  const card = options.locale ? localizeCard(input, options.locale) : input;
  const ctx: Ctx = {
    onAction: options.onAction ?? (() => undefined),
    onNotice: options.onNotice ?? (() => undefined),
    openUrl: options.openUrl ?? ((url) => window.open(url, "_blank", "noopener,noreferrer")),
    mentionName: options.mentionName ?? (() => undefined),
    form: undefined,
    locale: options.locale,
    chrome: DIALOG_BUTTONS[options.locale ?? "zh_cn"] ?? { ok: "确定", cancel: "取消" },
    words: CONSOLE_WORDS[isConsoleLocale(options.locale) ? options.locale : consoleLocale()],
  };
  const json = record(card);
  const width = oneOf(record(json?.config)?.width_mode, ["compact", "fill"], "default");
  const root = h("div", { class: `fc-card fc-width-${width}`, "data-testid": "card" });
  if (json?.schema !== "2.0") {
    root.append(h("div", { class: "fc-unsupported", text: ctx.words.unsupportedCard }));
    return root;
  }
  const header = record(json.header);
  if (header) root.append(renderHeader(header));
  const body = h("div", { class: "fc-body" });
  for (const node of nodes(record(json.body)?.elements)) body.append(renderNode(node, ctx));
  root.append(body);
  return root;
}

function renderHeader(header: Json): HTMLElement {
  const template = oneOf(header.template, TEMPLATES, "default");
  // Without a locale, a translated header's tags are its first language's (card-values.ts localizeCard).
  const i18nTags = record(header.i18n_text_tag_list);
  const tags = nodes(header.text_tag_list ?? (i18nTags ? Object.values(i18nTags)[0] : undefined))
    .slice(0, 3)
    .map((tag) =>
      h("span", {
        class: `fc-tag fc-color-${oneOf(tag.color, TEMPLATES, "neutral")}`,
        "data-testid": "card-tag",
        text: text(tag.text),
      }),
    );
  return h(
    "div",
    { class: `fc-header fc-template-${template}`, "data-testid": "card-header", "data-template": template },
    h(
      "div",
      { class: "fc-header-row" },
      h("div", { class: "fc-title", "data-testid": "card-title", text: text(header.title) }),
      tags,
    ),
    header.subtitle ? h("div", { class: "fc-subtitle", text: text(header.subtitle) }) : null,
  );
}

function renderNode(node: Json, ctx: Ctx): HTMLElement {
  const element = renderTag(node, ctx);
  const margin = spacing(node.margin);
  if (margin) element.style.margin = margin;
  return element;
}

function renderTag(node: Json, ctx: Ctx): HTMLElement {
  switch (node.tag) {
    case "markdown":
      return renderMarkdown(node, ctx);
    case "div":
      return renderDiv(node, ctx);
    case "hr":
      return h("hr", { class: "fc-hr" });
    case "column_set":
      return renderColumns(node, ctx);
    case "collapsible_panel":
      return renderPanel(node, ctx);
    case "form":
      return renderForm(node, ctx);
    case "button":
      return renderButton(node, ctx);
    case "select_static":
      return renderSelect(node, ctx);
    case "multi_select_static":
      return renderMultiSelect(node, ctx);
    case "input":
      return renderInput(node);
    default:
      return h("div", { class: "fc-unsupported", text: ctx.words.unsupportedTag(String(node.tag ?? "?")) });
  }
}

function renderMarkdown(node: Json, ctx: Ctx): HTMLElement {
  const size = oneOf(node.text_size, ["heading", "notation"], "normal");
  const align = oneOf(node.text_align, ["center", "right"], "left");
  const element = h("div", {
    class: `fc-markdown fc-text-${size} fc-align-${align}`,
    "data-testid": "card-markdown",
  });
  // Feishu draws the steps' ✅ ❌ ⏳ from its own emoji set; here they become icons (no emoji font needed).
  return iconizeStatusEmoji(
    setSafeHtml(
      element,
      markdownToHtml(resolveLocalDatetimes(resolveMentions(node.content, ctx.mentionName), ctx.locale)),
    ),
    ctx.words.icons,
  );
}

function renderDiv(node: Json, ctx: Ctx): HTMLElement {
  const element = h("div", { class: "fc-markdown fc-div" });
  const content = record(node.text);
  if (content?.tag === "lark_md")
    return iconizeStatusEmoji(setSafeHtml(element, markdownToHtml(content.content)), ctx.words.icons);
  element.textContent = text(content);
  return element;
}

function renderColumns(node: Json, ctx: Ctx): HTMLElement {
  const flex = oneOf(node.flex_mode, ["stretch", "flow", "bisect", "trisect"], "none");
  const set = h("div", { class: `fc-columns fc-flex-${flex}`, "data-testid": "card-columns" });
  const gap = spacing(node.horizontal_spacing);
  if (gap) set.style.columnGap = gap;
  for (const column of nodes(node.columns)) {
    const align = oneOf(column.vertical_align, ["center", "bottom"], "top");
    const element = h("div", { class: `fc-column fc-valign-${align}` });
    if (column.width === "auto") element.style.flex = "0 0 auto";
    else if (column.width === "weighted") element.style.flex = `${Number(column.weight) || 1} 1 0`;
    for (const child of nodes(column.elements)) element.append(renderNode(child, ctx));
    set.append(element);
  }
  return set;
}

function renderPanel(node: Json, ctx: Ctx): HTMLElement {
  const title = record(record(node.header)?.title);
  const titleElement = h("span", { class: "fc-panel-title" });
  if (title?.tag === "markdown") setSafeHtml(titleElement, inlineMarkdownToHtml(title.content));
  else titleElement.textContent = text(title);
  const content = h("div", { class: "fc-panel-body" });
  for (const child of nodes(node.elements)) content.append(renderNode(child, ctx));
  const color = record(node.border)?.color;
  const border = color === "neutral" ? color : oneOf(color, TEMPLATES, "grey");
  const panel = h("div", { class: `fc-panel fc-border-${border}`, "data-testid": "card-panel" });
  const toggle = h(
    "button",
    { type: "button", class: "fc-panel-header", "data-testid": "card-panel-header" },
    titleElement,
    h("span", { class: "fc-chevron", "aria-hidden": "true" }),
  );
  const setExpanded = (expanded: boolean) => {
    panel.classList.toggle("is-expanded", expanded);
    toggle.setAttribute("aria-expanded", String(expanded));
    content.hidden = !expanded;
  };
  toggle.addEventListener("click", () => setExpanded(content.hidden));
  setExpanded(node.expanded === true);
  panel.append(toggle, content);
  return panel;
}

function renderForm(node: Json, ctx: Ctx): HTMLElement {
  const form = h("form", { class: "fc-form", "data-testid": "card-form", "data-name": str(node.name) ?? "" });
  form.addEventListener("submit", (event) => event.preventDefault());
  const inner = { ...ctx, form };
  for (const child of nodes(node.elements)) form.append(renderNode(child, inner));
  return form;
}

function renderSelect(node: Json, ctx: Ctx): HTMLElement {
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

function renderMultiSelect(node: Json, ctx: Ctx): HTMLElement {
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

function renderInput(node: Json): HTMLElement {
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

function renderButton(node: Json, ctx: Ctx): HTMLElement {
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
