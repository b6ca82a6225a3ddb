/**
 * The rules the emulator's card checker enforces, each with the doc page it was written from
 * (docs/feishu-platform.md §1.5 prints this table). Written from the Card JSON 2.0 documentation, not
 * from our card builder: nothing here may import `src/cards/` (test/card-checker-boundary.test.ts).
 *
 * `basis` says how sure we are that Feishu refuses the same card:
 * - `docs`: a doc page says the value is invalid or the send fails;
 * - `field`: a field report (an issue in another project) saw the failure;
 * - `assumed`: the docs give the limit but not what happens past it; we refuse, to be safe;
 * - `emulator`: the emulator refuses what it cannot judge (Feishu may accept it).
 * What the docs say Feishu tolerates is not a rule here; docs/feishu-platform.md §1.6 lists it.
 */

export type RuleBasis = "docs" | "field" | "assumed" | "emulator";

export interface CardRule {
  /** What is refused, in a sentence. */
  summary: string;
  /** Doc page keys, see docs/feishu-platform.md §0. */
  source: string;
  basis: RuleBasis;
  /** The sub-code put in 230099's `ext=ErrCode` (the platform's card error code where one is documented). */
  subCode: number;
}

const PARSE = 200621;

export const CARD_RULES = {
  "schema-version": {
    summary: 'The card declares `"schema": "2.0"` (the emulator judges 2.0 cards only).',
    source: "D-struct",
    basis: "emulator",
    subCode: PARSE,
  },
  "v1-only": {
    summary:
      "No 1.0-only structure: top-level `elements`/`i18n_elements`/`fallback`, tags `note`, `action` (a component's own `fallback` and a top-level `i18n_header` are 2.0: the docs' 2.0 examples use them).",
    source: "D-v2notes, D-form and D-cols 2.0 examples; field: deepcoldy/botmux#139 (note → 200861)",
    basis: "docs",
    subCode: 200861,
  },
  "unknown-property": {
    summary: "Every property is one the component's doc page lists (2.0 rejects unsupported properties).",
    source: "D-v2notes, each component page; field: chenhg5/cc-connect#1278 (text_color on markdown)",
    basis: "docs",
    subCode: PARSE,
  },
  "property-value": {
    summary: "Every property has the documented type, enum value or range (widths, spacing, margins, …).",
    source: "each component page",
    basis: "docs",
    subCode: PARSE,
  },
  "unknown-tag": {
    summary: "Every `tag` names a 2.0 component or text element.",
    source: "D-components; field: xvirobotics/metabot#235 (tag code → not support tag)",
    basis: "docs",
    subCode: PARSE,
  },
  "unmodelled-tag": {
    summary:
      "2.0 components the checker has no model of (img, table, chart, …) are refused, not waved through.",
    source: "D-components",
    basis: "emulator",
    subCode: PARSE,
  },
  "update-multi": {
    summary: "`config.update_multi` is `true` (2.0 supports shared cards only); an update must declare it.",
    source: "D-struct, D-patch",
    basis: "docs",
    subCode: PARSE,
  },
  "header-title": {
    summary: "A header has a `title`.",
    source: "D-title",
    basis: "docs",
    subCode: PARSE,
  },
  "header-template": {
    summary: "`header.template` is one of the 13 template colours (blue … grey, default).",
    source: "D-title",
    basis: "docs",
    subCode: PARSE,
  },
  "tag-color": {
    summary:
      "`text_tag.color` is one of the 13 tag colours (neutral, blue, …, carmine): no `grey`, no `default`.",
    source: "D-title",
    basis: "docs",
    subCode: PARSE,
  },
  color: {
    summary:
      "Other colours are `default`, a colour-enumeration name, `rgba(…)` or a `config.style.color` key.",
    source: "D-color",
    basis: "docs",
    subCode: PARSE,
  },
  "element-id": {
    summary: "`element_id` uses letters, digits and `_`, starts with a letter, is at most 20 characters.",
    source: "D-struct",
    basis: "docs",
    subCode: PARSE,
  },
  "element-id-unique": {
    summary: "`element_id` is unique in the card.",
    source: "D-struct",
    basis: "docs",
    subCode: PARSE,
  },
  "name-unique": {
    summary: "`name`s (forms and their fields and buttons) are unique across the whole card.",
    source: "D-form",
    basis: "docs",
    subCode: PARSE,
  },
  "form-root": {
    summary: "A form sits only in `body.elements`, never inside another component.",
    source: "D-form",
    basis: "docs",
    subCode: PARSE,
  },
  "container-children": {
    summary: "No form or table inside a form, column, collapsible panel (2.0 containers hold anything else).",
    source: "D-v2notes, D-form, D-cols, D-panel",
    basis: "docs",
    subCode: PARSE,
  },
  "form-submit": {
    summary: "A form contains a button with `form_action_type: submit` (possibly inside a column set).",
    source: "D-form",
    basis: "docs",
    subCode: PARSE,
  },
  "form-field-name": {
    summary: "Every interactive component inside a form has a non-empty `name`.",
    source: "D-form, D-cb (200530)",
    basis: "docs",
    subCode: PARSE,
  },
  "form-button": {
    summary: "A button inside a form has `form_action_type` (submit or reset).",
    source: "D-button, D-form",
    basis: "docs",
    subCode: PARSE,
  },
  "form-only": {
    summary: "`form_action_type`, `required` and `multi_select_static` appear only inside a form.",
    source: "D-button, D-select, D-multi, D-input",
    basis: "docs",
    subCode: PARSE,
  },
  "button-behaviors": {
    summary:
      "A button's callback behavior carries an object `value` (a button may have no `behaviors`: the docs' form example's submit and reset have none).",
    source: "D-button, D-interact, D-form; field: submit without value → 200340",
    basis: "docs",
    subCode: PARSE,
  },
  options: {
    summary: "Option values are unique in a select; `selected_values` name option values.",
    source: "D-select, D-multi",
    basis: "docs",
    subCode: PARSE,
  },
  "text-length": {
    summary:
      "Button text ≤ 100 characters; multi-select and input placeholders ≤ 100 characters; in every language.",
    source: "D-button, D-multi, D-input",
    basis: "docs",
    subCode: PARSE,
  },
  "url-scheme": {
    summary:
      "Links (buttons, card_link, markdown) are http(s); per-platform URLs may also be the documented `lark://msgcard/unsupported_action`; markdown also allows `tel:`.",
    source: "D-faq (send Q4), D-md, D-interact",
    basis: "docs",
    subCode: PARSE,
  },
  "url-chars": {
    summary: "A URL holds no raw space, non-ASCII or other character a URL must percent-encode.",
    source: "D-faq (send Q6)",
    basis: "docs",
    subCode: PARSE,
  },
  "url-query": {
    summary:
      "A query value of an http(s) URL holds no raw `/` or `:` (the FAQ's fix encodes them: `?time=31%2F12%2F2014%2023%3A59%3A59`).",
    source: "D-faq (send Q6)",
    basis: "docs",
    subCode: PARSE,
  },
  "md-image": {
    summary: "Markdown images `![alt](key)` name an uploaded image key (`img_…`), never a URL or path.",
    source: "D-md; field: jxxghp/MoviePilot#5818, Tencent/WeKnora#2726 (200570 invalid image keys)",
    basis: "docs",
    subCode: 200570,
  },
  "md-bare-url": {
    summary:
      "A bare URL in markdown is not glued to Chinese (or other non-ASCII) letters; full-width punctuation may end it.",
    source: "D-faq (send Q5)",
    basis: "docs",
    subCode: PARSE,
  },
  "card-tables": {
    summary:
      "At most 3 tables in a card, markdown tables included, counted per language (the docs say 4 per markdown and 5 per card; the vendor measured 4 or more fail).",
    source:
      "D-md, D-faq (send Q2); field: larksuite/openclaw-lark card-error.ts (4+ tables → 11310), zarazhangrui/lark-coding-agent-bridge#152",
    basis: "field",
    subCode: 11310,
  },
  "md-at": {
    summary:
      "A markdown `<at>` names someone (`id`, `ids` or `email`, not empty) and is closed by `</at>`; error 100290 (invalid user in at).",
    source: "D-md (@指定人, @所有人), D-patch (230099 sub-code 100290)",
    basis: "docs",
    subCode: 100290,
  },
  "md-at-code": {
    summary:
      "No raw `<at` inside code spans or code blocks: whether Feishu honours code context for mentions is undocumented, and if not, `<at id=all>` there pings the group.",
    source: "D-md (silent on code context)",
    basis: "emulator",
    subCode: PARSE,
  },
  depth: {
    summary: "Components nest at most 5 levels (a column is part of its column set, not a level).",
    source: "D-faq (send Q2), D-form, D-cols",
    basis: "assumed",
    subCode: PARSE,
  },
  "component-count": {
    summary: "At most 200 components and elements; every object carrying a `tag` counts (options' text too).",
    source: "D-struct",
    basis: "assumed",
    subCode: PARSE,
  },
  size: {
    summary: "Card content ≤ 30 KB (30,720 bytes of the JSON-escaped `content` string); error 230025.",
    source: "D-create, D-patch, D-faq (send Q2)",
    basis: "assumed",
    subCode: 230025,
  },
} as const satisfies Record<string, CardRule>;

export type CardRuleId = keyof typeof CARD_RULES;

export function isRuleId(value: string): value is CardRuleId {
  return Object.hasOwn(CARD_RULES, value);
}

export const CARD_RULE_IDS: readonly CardRuleId[] = Object.keys(CARD_RULES).filter(isRuleId);
