import { h, setSafeHtml } from "./dom.js";
import { iconizeStatusEmoji } from "./icons.js";
import { escapeHtml, inlineMarkdownToHtml, markdownToHtml } from "./markdown.js";

/**
 * Renders Card JSON 2.0 (the subset in src/cards/model.ts, plus a few neighbours) the way the Feishu client
 * shows it. `renderCard(card, {onAction})` builds DOM; the helpers above it are pure and run in Node.
 * Nothing from a card reaches innerHTML except through markdownToHtml, which escapes all text.
 */

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
const FIELD_TAGS = new Set(["select_static", "multi_select_static", "input"]);
const PX = /^(-?\d{1,3}px)( -?\d{1,3}px){0,3}$/;
const SPACING = { small: "4px", medium: "8px", large: "12px", extra_large: "16px" };

export const REQUIRED_MISSING = "有必填项未填写";

/**
 * `form_value` as Feishu sends it on submit: `{[name]: value}` — select_static → the option's value,
 * multi_select_static → the chosen values, input → the text. Empty fields are left out.
 * @param {{tag: string, name: string, value?: string, values?: string[]}[]} fields
 */
export function collectFormValue(fields) {
  const formValue = {};
  for (const field of fields) {
    if (!field.name || !FIELD_TAGS.has(field.tag)) continue;
    if (field.tag === "multi_select_static") {
      const values = (field.values ?? []).filter((value) => typeof value === "string" && value !== "");
      if (values.length > 0) formValue[field.name] = values;
    } else if (typeof field.value === "string" && field.value !== "") {
      formValue[field.name] = field.value;
    }
  }
  return formValue;
}

/** Names of required fields left empty; the client refuses to submit then, and sends no callback. */
export function missingRequired(fields) {
  const filled = collectFormValue(fields);
  return fields.filter((field) => field.required === true && !(field.name in filled)).map((f) => f.name);
}

/** The callback value of a button (its first callback behavior), or undefined. */
export function callbackValue(button) {
  const behavior = (button?.behaviors ?? []).find((b) => b?.type === "callback");
  return behavior && typeof behavior.value === "object" && behavior.value !== null
    ? behavior.value
    : undefined;
}

/** What a click sends: the button's callback value and name, and for a submit the form's values. */
export function buttonAction(button, formValue) {
  const value = callbackValue(button);
  return {
    ...(value !== undefined ? { value } : {}),
    ...(typeof button?.name === "string" && button.name !== "" ? { name: button.name } : {}),
    ...(formValue !== undefined ? { formValue } : {}),
  };
}

/** Links a card may open: http(s) only. */
export function safeUrl(url) {
  if (typeof url !== "string") return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

/** A one-line description of a card for the chat list: its summary, else its title. */
export function cardPreview(card) {
  const summary = card?.config?.summary?.content;
  const title = card?.header?.title?.content;
  return `[卡片] ${typeof summary === "string" && summary ? summary : typeof title === "string" ? title : ""}`.trim();
}

const text = (value) => (typeof value?.content === "string" ? value.content : "");
const spacing = (value) =>
  SPACING[value] ?? (typeof value === "string" && PX.test(value) ? value : undefined);

/**
 * The card as a client in `locale` reads it (配置卡片多语言): each text's `i18n_content[locale]` in place of
 * its `content`, else `content` as it is. Callback values are free data and stay untouched.
 * @param {unknown} card
 * @param {string} locale
 * @returns {unknown}
 */
export function localizeCard(card, locale) {
  if (Array.isArray(card)) return card.map((item) => localizeCard(item, locale));
  if (typeof card !== "object" || card === null) return card;
  const own = card.i18n_content?.[locale];
  const out = {};
  for (const [key, value] of Object.entries(card)) {
    if (key === "i18n_content") continue;
    if (key === "content" && typeof own === "string") out[key] = own;
    else out[key] = key === "value" ? value : localizeCard(value, locale);
  }
  return out;
}

/**
 * @param {unknown} input Card JSON 2.0
 * @param {{onAction?: (action: {value?: object, name?: string, formValue?: object}) => Promise<unknown> | unknown,
 *          onNotice?: (message: string) => void, openUrl?: (url: string) => void,
 *          mentionName?: (openId: string) => string | undefined, locale?: string}} [options]
 * @returns {HTMLElement}
 */
export function renderCard(input, options = {}) {
  // A client shows one language: the console's switch picks which (default: each text's `content`).
  const card = options.locale ? localizeCard(input, options.locale) : input;
  const ctx = {
    onAction: options.onAction ?? (() => undefined),
    onNotice: options.onNotice ?? (() => undefined),
    openUrl: options.openUrl ?? ((url) => window.open(url, "_blank", "noopener,noreferrer")),
    mentionName: options.mentionName ?? (() => undefined),
    form: undefined,
  };
  const width = ["compact", "fill"].includes(card?.config?.width_mode) ? card.config.width_mode : "default";
  const root = h("div", { class: `fc-card fc-width-${width}`, "data-testid": "card" });
  if (typeof card !== "object" || card === null || card.schema !== "2.0") {
    root.append(h("div", { class: "fc-unsupported", text: "[不支持的卡片：仅能显示 Card JSON 2.0]" }));
    return root;
  }
  if (card.header) root.append(renderHeader(card.header));
  const body = h("div", { class: "fc-body" });
  for (const node of card.body?.elements ?? []) body.append(renderNode(node, ctx));
  root.append(body);
  return root;
}

function renderHeader(header) {
  const template = TEMPLATES.has(header.template) ? header.template : "default";
  const tags = (header.text_tag_list ?? []).slice(0, 3).map((tag) =>
    h("span", {
      class: `fc-tag fc-color-${TEMPLATES.has(tag?.color) ? tag.color : "neutral"}`,
      "data-testid": "card-tag",
      text: text(tag?.text),
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

function renderNode(node, ctx) {
  const element = renderTag(node, ctx);
  const margin =
    typeof node?.margin === "string" && PX.test(node.margin) ? node.margin : spacing(node?.margin);
  if (margin) element.style.margin = margin;
  return element;
}

function renderTag(node, ctx) {
  switch (node?.tag) {
    case "markdown":
      return renderMarkdown(node, ctx);
    case "div":
      return renderDiv(node);
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
      return renderSelect(node);
    case "multi_select_static":
      return renderMultiSelect(node);
    case "input":
      return renderInput(node);
    default:
      return h("div", { class: "fc-unsupported", text: `[暂不支持的组件：${String(node?.tag ?? "?")}]` });
  }
}

function renderMarkdown(node, ctx) {
  const size = ["heading", "notation"].includes(node.text_size) ? node.text_size : "normal";
  const align = ["center", "right"].includes(node.text_align) ? node.text_align : "left";
  const element = h("div", {
    class: `fc-markdown fc-text-${size} fc-align-${align}`,
    "data-testid": "card-markdown",
  });
  // Feishu draws the steps' ✅ ❌ ⏳ from its own emoji set; here they become icons (no emoji font needed).
  return iconizeStatusEmoji(
    setSafeHtml(element, markdownToHtml(resolveMentions(node.content, ctx.mentionName))),
  );
}

/**
 * Feishu shows `<at id=ou_…></at>` in card markdown as @ and the person's name (`<at id=all></at>` as
 * @所有人). Done before markdownToHtml, as plain text that it then escapes like any other. Text a user or a
 * model wrote reaches the card with its `<` escaped by the bot, so it never matches here.
 * @param {unknown} content
 * @param {(openId: string) => string | undefined} mentionName
 */
export function resolveMentions(content, mentionName) {
  return String(content ?? "").replace(AT_TAG, (_match, _quote, id) => {
    if (id === "all") return "@所有人";
    return `@${mentionName(id) ?? id}`;
  });
}
const AT_TAG = /<at\s+id=(["']?)([A-Za-z0-9_-]+)\1\s*>\s*<\/at>/g;

function renderDiv(node) {
  const element = h("div", { class: "fc-markdown fc-div" });
  if (node.text?.tag === "lark_md")
    return iconizeStatusEmoji(setSafeHtml(element, markdownToHtml(node.text.content)));
  element.textContent = text(node.text);
  return element;
}

function renderColumns(node, ctx) {
  const flex = ["stretch", "flow", "bisect", "trisect"].includes(node.flex_mode) ? node.flex_mode : "none";
  const set = h("div", { class: `fc-columns fc-flex-${flex}`, "data-testid": "card-columns" });
  const gap = spacing(node.horizontal_spacing);
  if (gap) set.style.columnGap = gap;
  for (const column of node.columns ?? []) {
    const align = ["center", "bottom"].includes(column?.vertical_align) ? column.vertical_align : "top";
    const element = h("div", { class: `fc-column fc-valign-${align}` });
    if (column?.width === "auto") element.style.flex = "0 0 auto";
    else if (column?.width === "weighted") element.style.flex = `${Number(column.weight) || 1} 1 0`;
    for (const child of column?.elements ?? []) element.append(renderNode(child, ctx));
    set.append(element);
  }
  return set;
}

function renderPanel(node, ctx) {
  const title = node.header?.title;
  const titleElement = h("span", { class: "fc-panel-title" });
  if (title?.tag === "markdown") setSafeHtml(titleElement, inlineMarkdownToHtml(title.content));
  else titleElement.textContent = text(title);
  const content = h("div", { class: "fc-panel-body" });
  for (const child of node.elements ?? []) content.append(renderNode(child, ctx));
  const border =
    TEMPLATES.has(node.border?.color) || node.border?.color === "neutral" ? node.border.color : "grey";
  const panel = h("div", { class: `fc-panel fc-border-${border}`, "data-testid": "card-panel" });
  const toggle = h(
    "button",
    { type: "button", class: "fc-panel-header", "data-testid": "card-panel-header" },
    titleElement,
    h("span", { class: "fc-chevron", "aria-hidden": "true" }),
  );
  const setExpanded = (expanded) => {
    panel.classList.toggle("is-expanded", expanded);
    toggle.setAttribute("aria-expanded", String(expanded));
    content.hidden = !expanded;
  };
  toggle.addEventListener("click", () => setExpanded(content.hidden));
  setExpanded(node.expanded === true);
  panel.append(toggle, content);
  return panel;
}

function renderForm(node, ctx) {
  const form = h("form", { class: "fc-form", "data-testid": "card-form", "data-name": node.name ?? "" });
  form.addEventListener("submit", (event) => event.preventDefault());
  const inner = { ...ctx, form };
  for (const child of node.elements ?? []) form.append(renderNode(child, inner));
  return form;
}

function renderSelect(node) {
  const select = h("select", {
    class: `fc-select${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": "form-field",
    "data-tag": "select_static",
    "data-name": node.name ?? "",
    "data-required": node.required === true ? "true" : "false",
    "aria-label": text(node.placeholder) || node.name,
  });
  select.append(
    h("option", { value: "", disabled: true, selected: true, text: text(node.placeholder) || "请选择" }),
  );
  // initial_option wins over initial_index (1-based, 0 = none), as the docs say.
  const initial =
    node.initial_option !== undefined
      ? (node.options ?? []).findIndex((option) => option.value === node.initial_option)
      : Number.isInteger(node.initial_index)
        ? node.initial_index - 1
        : -1;
  (node.options ?? []).forEach((option, index) => {
    const selected = index === initial;
    select.append(h("option", { value: option.value ?? "", selected, text: text(option.text) }));
  });
  return select;
}

function renderMultiSelect(node) {
  const chosen = new Set(Array.isArray(node.selected_values) ? node.selected_values : []);
  const box = h("fieldset", {
    class: `fc-multi${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": "form-field",
    "data-tag": "multi_select_static",
    "data-name": node.name ?? "",
    "data-required": node.required === true ? "true" : "false",
  });
  box.append(h("legend", { class: "fc-multi-placeholder", text: text(node.placeholder) || "可多选" }));
  for (const option of node.options ?? []) {
    box.append(
      h(
        "label",
        { class: "fc-check" },
        h("input", { type: "checkbox", value: option.value ?? "", checked: chosen.has(option.value) }),
        h("span", { text: text(option.text) }),
      ),
    );
  }
  return box;
}

function renderInput(node) {
  return h("input", {
    type: "text",
    class: `fc-input${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": "form-field",
    "data-tag": "input",
    "data-name": node.name ?? "",
    "data-required": node.required === true ? "true" : "false",
    placeholder: text(node.placeholder),
    maxlength: Number.isInteger(node.max_length) ? node.max_length : 1000,
    value: typeof node.default_value === "string" ? node.default_value : undefined,
    "aria-label": text(node.placeholder) || node.name,
  });
}

/** The fields of one form as the pure helpers take them. */
export function readFormFields(form) {
  return [...form.querySelectorAll('[data-testid="form-field"]')].map((element) => ({
    tag: element.dataset.tag,
    name: element.dataset.name,
    required: element.dataset.required === "true",
    ...(element.dataset.tag === "multi_select_static"
      ? { values: [...element.querySelectorAll("input:checked")].map((box) => box.value) }
      : { value: element.value }),
  }));
}

function resetForm(form) {
  for (const element of form.querySelectorAll('[data-testid="form-field"]')) {
    if (element.dataset.tag === "multi_select_static")
      for (const box of element.querySelectorAll("input")) box.checked = box.defaultChecked;
    else if (element.tagName === "SELECT") element.selectedIndex = 0;
    else element.value = element.defaultValue;
  }
}

function renderButton(node, ctx) {
  const type = BUTTON_TYPES.has(node.type) ? node.type : "default";
  const size = ["tiny", "small", "large"].includes(node.size) ? node.size : "medium";
  const submits = node.form_action_type === "submit" && ctx.form !== undefined;
  const button = h("button", {
    type: "button",
    class: `fc-btn fc-btn-${type} fc-btn-${size}${node.width === "fill" ? " fc-fill" : ""}`,
    "data-testid": submits ? "submit-button" : "card-button",
    "data-name": node.name ?? "",
    disabled: node.disabled === true,
    text: text(node.text),
  });
  button.addEventListener("click", () => clickButton(node, button, ctx));
  return button;
}

async function clickButton(node, button, ctx) {
  if (node.form_action_type === "reset" && ctx.form) return resetForm(ctx.form);
  for (const behavior of node.behaviors ?? []) {
    const url = behavior?.type === "open_url" ? safeUrl(behavior.default_url ?? behavior.pc_url) : undefined;
    if (url) ctx.openUrl(url);
  }
  let action;
  if (node.form_action_type === "submit" && ctx.form) {
    const fields = readFormFields(ctx.form);
    if (missingRequired(fields).length > 0) return ctx.onNotice(REQUIRED_MISSING);
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
