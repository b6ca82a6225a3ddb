import type { z } from "zod";
import { UNMODELLED_TAGS, V1_ONLY_TAGS } from "./enums.ts";
import { localizedTexts } from "./i18n.ts";
import { checkMarkdown, checkUrl } from "./markdown.ts";
import type { Report } from "./report.ts";

/**
 * Walks `body.elements`: each component's own properties (its schema), then the rules between
 * components: where a form may sit, what a container may hold, names, submit buttons, nesting depth.
 */

const MAX_DEPTH = 5;
const MAX_TEXT_CHARS = 100;
const FIELDS = new Set(["select_static", "multi_select_static", "input"]);

type Parent = "body" | "form" | "column" | "collapsible_panel";
interface Place {
  path: string;
  depth: number;
  inForm: boolean;
  parent: Parent;
}

export interface Walker {
  report: Report;
  schemas: ReadonlyMap<string, z.ZodType>;
  /** name → paths, checked for card-wide uniqueness at the end. */
  names: Map<string, string[]>;
  /**
   * Tables in each markdown text: in its `content` and in each `i18n_content` language. Summed per language
   * (a client reads one) and checked against the card's limit at the end.
   */
  tables: TableCount[];
}

export interface TableCount {
  path: string;
  content: number;
  byLocale: Record<string, number>;
}

type Obj = Record<string, unknown>;
const isObj = (value: unknown): value is Obj =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const chars = (text: string): number => [...text].length;

export function walkElements(w: Walker, elements: unknown, place: Place): void {
  list(elements).forEach((node, i) => {
    walkNode(w, node, { ...place, path: `${place.path}[${i}]` });
  });
}

function walkNode(w: Walker, node: unknown, place: Place): void {
  const schema = schemaFor(w, node, place);
  if (!schema || !isObj(node)) return;
  w.report.parse(schema, node, place.path);
  checkBehaviors(w, node, place.path);
  checkContents(w, node, place);
}

/** The component's schema, or undefined once its tag (or its place) has been reported. */
function schemaFor(w: Walker, node: unknown, place: Place): z.ZodType | undefined {
  const { report } = w;
  const tag = isObj(node) ? str(node.tag) : undefined;
  if (tag === undefined) {
    report.add("unknown-tag", place.path, "a component is an object with a string `tag`");
    return undefined;
  }
  if (place.depth > MAX_DEPTH)
    report.add(
      "depth",
      place.path,
      `nested ${place.depth} levels deep; components nest at most ${MAX_DEPTH}`,
    );
  if (V1_ONLY_TAGS.has(tag)) {
    report.add("v1-only", place.path, `"${tag}" is a 1.0 component that 2.0 removed`);
    return undefined;
  }
  if (tag === "table" && place.parent !== "body") {
    report.add("container-children", place.path, `a table cannot sit inside a ${place.parent}`);
    return undefined;
  }
  if (UNMODELLED_TAGS.has(tag)) {
    report.add(
      "unmodelled-tag",
      place.path,
      `"${tag}" is a 2.0 component the emulator's checker does not model`,
    );
    return undefined;
  }
  const schema = tag === "column" ? undefined : w.schemas.get(tag);
  if (!schema) {
    const why = tag === "column" ? "a column only sits in a column_set's `columns`" : "not a 2.0 component";
    report.add("unknown-tag", place.path, `"${tag}": ${why}`);
  }
  return schema;
}

/** What a component holds: children (one level deeper), markdown text, or the form rules of its fields. */
function checkContents(w: Walker, node: Obj, place: Place): void {
  const inner = { ...place, depth: place.depth + 1 };
  switch (node.tag) {
    case "form":
      checkForm(w, node, place);
      walkElements(w, node.elements, {
        ...inner,
        path: `${place.path}.elements`,
        inForm: true,
        parent: "form",
      });
      return;
    case "column_set":
      walkColumns(w, node, inner);
      return;
    case "collapsible_panel": {
      const title = isObj(node.header) && isObj(node.header.title) ? node.header.title : undefined;
      if (title?.tag === "markdown") checkMarkdownText(w, title, `${place.path}.header.title`);
      const path = `${place.path}.elements`;
      walkElements(w, node.elements, { ...inner, path, parent: "collapsible_panel" });
      return;
    }
    case "markdown":
      checkMarkdownText(w, node, place.path);
      return;
    case "div":
      if (isObj(node.text) && node.text.tag === "lark_md")
        checkMarkdownText(w, node.text, `${place.path}.text`);
      return;
    case "button":
      checkButton(w, node, place);
      return;
    default:
      if (typeof node.tag === "string" && FIELDS.has(node.tag)) checkField(w, node.tag, node, place);
  }
}

/** A column is part of its column set, not a nesting level: its elements sit one level below the set. */
function walkColumns(w: Walker, node: Obj, inner: Place): void {
  const columnSchema = w.schemas.get("column");
  list(node.columns).forEach((column, c) => {
    const path = `${inner.path}.columns[${c}]`;
    if (!isObj(column) || column.tag !== "column" || !columnSchema) {
      w.report.add("unknown-tag", path, 'a column_set\'s columns are {"tag": "column"} objects');
      return;
    }
    w.report.parse(columnSchema, column, path);
    walkElements(w, column.elements, { ...inner, path: `${path}.elements`, parent: "column" });
  });
}

function checkForm(w: Walker, node: Obj, place: Place): void {
  if (place.parent !== "body")
    w.report.add("form-root", place.path, `a form may only sit in body.elements, not in a ${place.parent}`);
  const name = str(node.name);
  if (name === "") w.report.add("form-field-name", `${place.path}.name`, "a form needs a non-empty name");
  if (name) addName(w, name, place.path);
  if (!containsSubmit(node.elements))
    w.report.add(
      "form-submit",
      place.path,
      `form "${name ?? ""}" has no button with form_action_type "submit"`,
    );
}

function containsSubmit(elements: unknown): boolean {
  return list(elements).some((node) => {
    if (!isObj(node)) return false;
    if (node.tag === "button")
      return node.form_action_type === "submit" || node.action_type === "form_submit";
    if (node.tag === "column_set")
      return list(node.columns).some((col) => isObj(col) && containsSubmit(col.elements));
    return node.tag === "collapsible_panel" && containsSubmit(node.elements);
  });
}

function checkButton(w: Walker, node: Obj, place: Place): void {
  for (const [key, text] of localizedTexts(node.text))
    if (chars(text) > MAX_TEXT_CHARS)
      w.report.add(
        "text-length",
        `${place.path}.text.${key}`,
        `button text is ${chars(text)} characters; at most 100`,
      );
  // No `behaviors` is fine: the form page's own 2.0 example has a submit and a reset button without any.
  const formAction =
    node.form_action_type ?? (str(node.action_type)?.startsWith("form_") ? node.action_type : undefined);
  if (place.inForm) {
    if (!str(node.name)) w.report.add("form-field-name", place.path, "a button inside a form needs a name");
    if (formAction === undefined)
      w.report.add(
        "form-button",
        place.path,
        'a button inside a form needs form_action_type "submit" or "reset"',
      );
  } else if (formAction !== undefined) {
    w.report.add(
      "form-only",
      `${place.path}.form_action_type`,
      "form_action_type is only for buttons in a form",
    );
  }
  const name = str(node.name);
  if (name) addName(w, name, place.path);
}

function checkField(w: Walker, tag: string, node: Obj, place: Place): void {
  const name = str(node.name);
  if (place.inForm && !name)
    w.report.add("form-field-name", place.path, `a ${tag} inside a form needs a non-empty name`);
  if (!place.inForm && node.required !== undefined)
    w.report.add("form-only", `${place.path}.required`, "`required` is only valid inside a form");
  if (!place.inForm && tag === "multi_select_static")
    w.report.add("form-only", place.path, "multi_select_static may only be used inside a form");
  if (name) addName(w, name, place.path);
  if (tag !== "select_static")
    for (const [key, placeholder] of localizedTexts(node.placeholder))
      if (chars(placeholder) > MAX_TEXT_CHARS)
        w.report.add("text-length", `${place.path}.placeholder.${key}`, "placeholder over 100 characters");
  if (tag === "input") return;
  const values = list(node.options).map((option) => (isObj(option) ? str(option.value) : undefined));
  const seen = new Set<string>();
  for (const value of values) {
    if (value === undefined) continue;
    if (seen.has(value))
      w.report.add("options", `${place.path}.options`, `option value "${value}" is repeated`);
    seen.add(value);
  }
  for (const value of list(node.selected_values))
    if (typeof value === "string" && !seen.has(value))
      w.report.add("options", `${place.path}.selected_values`, `"${value}" is not one of the option values`);
  if (typeof node.initial_index === "number" && node.initial_index > values.length)
    w.report.add(
      "property-value",
      `${place.path}.initial_index`,
      `initial_index is past the ${values.length} options`,
    );
}

/** Button links: the fallback URL must be http(s); per-platform ones may be empty or the documented blocker. */
function checkBehaviors(w: Walker, node: Obj, path: string): void {
  list(node.behaviors).forEach((behavior, i) => {
    if (!isObj(behavior) || behavior.type !== "open_url") return;
    for (const key of ["default_url", "pc_url", "ios_url", "android_url"]) {
      const url = str(behavior[key]);
      if (url === undefined || (url === "" && key !== "default_url")) continue;
      for (const problem of checkUrl(url, { allowUnsupportedAction: key !== "default_url" }))
        w.report.add(problem.rule, `${path}.behaviors[${i}].${key}`, problem.message);
    }
  });
}

function checkMarkdownText(w: Walker, text: Obj, path: string): void {
  const contents: [string, unknown][] = [["content", text.content]];
  if (isObj(text.i18n_content))
    for (const [locale, value] of Object.entries(text.i18n_content))
      contents.push([`i18n_content.${locale}`, value]);
  const count: TableCount = { path: `${path}.content`, content: 0, byLocale: {} };
  for (const [key, value] of contents) {
    if (typeof value !== "string") continue;
    const { problems, tables } = checkMarkdown(value);
    for (const problem of problems) w.report.add(problem.rule, `${path}.${key}`, problem.message);
    if (key === "content") count.content = tables;
    else count.byLocale[key.slice("i18n_content.".length)] = tables;
  }
  w.tables.push(count);
}

function addName(w: Walker, name: string, path: string): void {
  w.names.set(name, [...(w.names.get(name) ?? []), path]);
}
