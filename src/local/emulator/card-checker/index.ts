import { z } from "zod";
import { bodySchema, cardLinkSchema, configSchema, headerSchema } from "./card-level.ts";
import { componentSchemas } from "./components.ts";
import { checkUrl } from "./markdown.ts";
import { type CardViolation, describe, Report } from "./report.ts";
import { i18n } from "./values.ts";
import { type Walker, walkElements } from "./walk.ts";

/**
 * The emulator's independent card checker: judges a card the way the Card JSON 2.0 docs say Feishu does
 * (rules and sources in ./rules.ts and docs/feishu-platform.md §1.5). It shares no code with `src/cards/`,
 * so a misread rule in our builder shows up as a refused card instead of being confirmed by itself.
 *
 * Entry point: `checkCard(card)`. The emulator calls it through `checkCardContent` (content.ts) for every
 * send, reply, PATCH, delayed update and callback-response card.
 */

export type { CardViolation } from "./report.ts";
export { describe as describeViolations } from "./report.ts";
export { CARD_RULE_IDS, CARD_RULES, type CardRuleId } from "./rules.ts";

export const CARD_LIMITS = {
  /** 30 KB of card content (230025); the unit is not documented, 1 KB = 1024 bytes assumed. */
  maxBytes: 30 * 1024,
  /** "一张卡片最多支持 200 个元素或组件". */
  maxTagged: 200,
  /**
   * The docs say "单张卡片最多支持放置五个表格组件" (per language); the vendor's own plugin measured that 4 or more
   * already fail with 11310 (larksuite/openclaw-lark card-error.ts), so 3, markdown tables included.
   */
  maxTables: 3,
} as const;

export type CardVerdict =
  | { ok: true; tagged: number }
  | { ok: false; violations: CardViolation[]; summary: string };

// `i18n_header` (a header per language) appears in the docs' own 2.0 examples (分栏, 普通文本 pages).
const TOP_LEVEL = new Set(["schema", "config", "card_link", "header", "i18n_header", "body"]);
const V1_TOP_LEVEL = new Set(["elements", "i18n_elements", "fallback"]);

type Obj = Record<string, unknown>;
const isObj = (value: unknown): value is Obj =>
  typeof value === "object" && value !== null && !Array.isArray(value);

// Schemas depend only on the card's custom colours; almost every card declares none.
// Building zod schemas is far dearer than using them (zod compiles each on first use), so build once.
interface Schemas {
  components: ReadonlyMap<string, z.ZodType>;
  header: z.ZodType;
}
const schemaCache = new Map<string, Schemas>();

export function checkCard(card: unknown): CardVerdict {
  const report = new Report();
  if (!isObj(card)) {
    report.add("property-value", "", "a card is a JSON object");
    return verdict(report, 0);
  }
  // First, before any recursive walk: hostile nesting must not exhaust the stack.
  if (!eachObject(card, () => {})) {
    report.add("depth", "", `the card's JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
    return verdict(report, 0);
  }
  if (card.schema !== "2.0") report.add("schema-version", "schema", 'expected "schema": "2.0"');
  for (const key of Object.keys(card)) {
    if (V1_TOP_LEVEL.has(key))
      report.add("v1-only", key, `"${key}" is 1.0 structure; 2.0 puts elements under body`);
    else if (!TOP_LEVEL.has(key))
      report.add("unknown-property", key, `unsupported top-level property "${key}"`);
  }
  const customColors = new Set(Object.keys(customColorMap(card.config)));
  if (card.config !== undefined) report.parse(configSchema, card.config, "config");
  if (card.card_link !== undefined) checkCardLink(report, card.card_link);
  if (card.header !== undefined) {
    if (isObj(card.header) && card.header.title === undefined)
      report.add("header-title", "header", "a header needs a title");
    else report.parse(schemasFor(customColors).header, card.header, "header");
  }
  if (card.i18n_header !== undefined) checkI18nHeader(report, card.i18n_header, customColors);
  if (card.body !== undefined) checkBody(report, card.body, customColors);
  checkElementIds(report, card);
  const tagged = countTagged(card);
  if (tagged > CARD_LIMITS.maxTagged)
    report.add("component-count", "", `${tagged} components and elements; a card holds at most 200`);
  return verdict(report, tagged);
}

/** `i18n_header`: a language code → a header like `header` (配置卡片多语言 keys). */
function checkI18nHeader(report: Report, headers: unknown, customColors: ReadonlySet<string>): void {
  if (!report.parse(i18nHeaderKeys, headers, "i18n_header") || !isObj(headers)) return;
  for (const [locale, header] of Object.entries(headers)) {
    if (isObj(header) && header.title === undefined)
      report.add("header-title", `i18n_header.${locale}`, "a header needs a title");
    else report.parse(schemasFor(customColors).header, header, `i18n_header.${locale}`);
  }
}
const i18nHeaderKeys = i18n(z.unknown());

/** `body` and its elements: each component, then the card-wide counts (tables, names). */
function checkBody(report: Report, body: unknown, customColors: ReadonlySet<string>): void {
  report.parse(bodySchema, body, "body");
  const names = new Map<string, string[]>();
  const tables: Walker["tables"] = [];
  const walker = { report, schemas: schemasFor(customColors).components, names, tables };
  const elements = isObj(body) ? body.elements : undefined;
  walkElements(walker, elements, { path: "body.elements", depth: 1, inForm: false, parent: "body" });
  // A client reads one language: each language's tables, where a text has none of its own its content's.
  const languages = new Set(["content", ...tables.flatMap((t) => Object.keys(t.byLocale))]);
  for (const language of languages) {
    const per = tables.map((t) => ({ path: t.path, n: t.byLocale[language] ?? t.content }));
    const count = per.reduce((sum, t) => sum + t.n, 0);
    if (count > CARD_LIMITS.maxTables)
      report.add(
        "card-tables",
        per.find((t) => t.n > 0)?.path ?? "",
        `${count} tables in the card's markdown${language === "content" ? "" : ` (${language})`}; at most ${CARD_LIMITS.maxTables}`,
      );
  }
  for (const [name, paths] of names)
    if (paths.length > 1)
      report.add(
        "name-unique",
        paths[1] ?? "",
        `name "${name}" is used ${paths.length} times (${paths.join(", ")})`,
      );
}

function verdict(report: Report, tagged: number): CardVerdict {
  const { violations } = report;
  return violations.length === 0
    ? { ok: true, tagged }
    : { ok: false, violations, summary: describe(violations) };
}

function schemasFor(customColors: ReadonlySet<string>): Schemas {
  const key = [...customColors].sort().join("\n");
  let schemas = schemaCache.get(key);
  if (!schemas) {
    schemas = { components: componentSchemas({ customColors }), header: headerSchema({ customColors }) };
    if (schemaCache.size < 16) schemaCache.set(key, schemas);
  }
  return schemas;
}

function customColorMap(config: unknown): Obj {
  if (!isObj(config) || !isObj(config.style) || !isObj(config.style.color)) return {};
  return config.style.color;
}

/** card_link: `url`, or all three of pc/ios/android (结构 page), each a link the FAQ accepts. */
function checkCardLink(report: Report, link: unknown): void {
  if (!report.parse(cardLinkSchema, link, "card_link") || !isObj(link)) return;
  const complete =
    link.url !== undefined || ["pc_url", "ios_url", "android_url"].every((k) => link[k] !== undefined);
  if (!complete)
    report.add("property-value", "card_link", "card_link needs url, or pc_url, ios_url and android_url");
  for (const [key, value] of Object.entries(link))
    if (typeof value === "string")
      for (const problem of checkUrl(value, { allowUnsupportedAction: true }))
        report.add(problem.rule, `card_link.${key}`, problem.message);
}

/** Far past the 5 levels a card may nest; stops hostile JSON (`[[[[…` in 30 KB) from exhausting the stack. */
const MAX_JSON_DEPTH = 64;

/**
 * Visits every object of the card except callback `value`s (free data, not card structure): calls
 * `visit` with each object and its path. Returns false when the JSON nests deeper than MAX_JSON_DEPTH.
 */
function eachObject(root: unknown, visit: (value: Obj, path: string) => void, path = "", level = 0): boolean {
  if (level > MAX_JSON_DEPTH) return false;
  if (Array.isArray(root))
    return root.every((item, i) => eachObject(item, visit, `${path}[${i}]`, level + 1));
  if (!isObj(root)) return true;
  visit(root, path);
  return Object.entries(root).every(
    ([key, child]) =>
      key === "value" || eachObject(child, visit, path === "" ? key : `${path}.${key}`, level + 1),
  );
}

const ELEMENT_ID = /^[A-Za-z][A-Za-z0-9_]{0,19}$/;

/** element_id: letters, digits, _, starting with a letter, ≤ 20 characters, unique in the card (结构 page). */
function checkElementIds(report: Report, card: Obj): void {
  const seen = new Map<string, string>();
  eachObject(card, (value, path) => {
    if (!("element_id" in value)) return;
    const id = value.element_id;
    const where = `${path}.element_id`;
    if (typeof id !== "string" || !ELEMENT_ID.test(id)) {
      report.add(
        "element-id",
        where,
        `element_id ${JSON.stringify(id)} must be letters, digits and _, start with a letter, ≤ 20 chars`,
      );
      return;
    }
    const first = seen.get(id);
    if (first !== undefined)
      report.add("element-id-unique", where, `element_id "${id}" is also used at ${first}`);
    else seen.set(id, where);
  });
}

/** Every object with a string `tag` is a component or an element, and each counts towards the 200. */
function countTagged(card: Obj): number {
  let count = 0;
  eachObject(card, (value) => {
    if (typeof value.tag === "string") count += 1;
  });
  return count;
}
