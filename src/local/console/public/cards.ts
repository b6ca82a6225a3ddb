import { iconizeStatusEmoji } from "../../../web/public/icons.ts";
import { escapeHtml, inlineMarkdownToHtml, markdownToHtml } from "../../../web/public/markdown.ts";
import { HEADER_TEMPLATES } from "../../emulator/card-checker/enums.ts";
import {
  type Ctx,
  nodes,
  oneOf,
  type RenderOptions,
  renderButton,
  renderInput,
  renderMultiSelect,
  renderSelect,
  str,
  text,
} from "./card-controls.ts";
import { type Json, localizeCard, record, resolveLocalDatetimes, resolveMentions } from "./card-values.ts";
import { h, setSafeHtml } from "./dom.ts";
import { CONSOLE_WORDS, consoleLocale, isConsoleLocale } from "./words.ts";

/**
 * Renders Card JSON 2.0 (the subset in src/cards/model.ts, plus a few neighbours) the way the Feishu client
 * shows it. `renderCard(card, {onAction})` builds DOM; its controls and buttons live in card-controls.ts, its
 * pure helpers in card-values.ts.
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

/** The header templates the platform knows (the emulator's checker has the one list the console renders by). */
const TEMPLATES: ReadonlySet<string> = new Set(HEADER_TEMPLATES);
const PX = /^(-?\d{1,3}px)( -?\d{1,3}px){0,3}$/;
const SPACING: Record<string, string> = { small: "4px", medium: "8px", large: "12px", extra_large: "16px" };

/** What a Feishu client writes on a 二次确认弹窗's buttons, by its language. */
const DIALOG_BUTTONS: Record<string, { ok: string; cancel: string }> = {
  zh_cn: { ok: "确定", cancel: "取消" },
  en_us: { ok: "Confirm", cancel: "Cancel" },
};

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
