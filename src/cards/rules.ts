import type { z } from "zod";
import { type Card, type CardNode, cardSchema } from "./model.ts";

/**
 * The platform's card rules (feishu-platform §1.2–1.3, §6.4–6.5), checked before anything is sent.
 * Pure: no I/O imports.
 */
export const CARD_LIMITS = {
  /** Card & post content in a send/reply/PATCH body: 30 KB (230025). */
  maxBytes: 30 * 1024,
  /**
   * What the builder aims for. How Feishu counts the 30 KB is undocumented (KB base, escaping, style tags
   * "inflate" it), so filling up to exactly 30,720 of our bytes has no margin: ~2 KB of headroom.
   */
  targetBytes: 28 * 1024,
  /** The budget after the platform refused a card as invalid or too large (publisher re-renders degraded). */
  degradedBytes: 20 * 1024,
  /** Components and text elements per 2.0 card (every option's text counts). */
  maxComponents: 200,
  /** Containers nest at most 5 levels. */
  maxDepth: 5,
  maxPlaceholderChars: 100,
  maxButtonTextChars: 100,
  maxElementIdChars: 20,
} as const;

/**
 * Size of a card as it travels: the card is sent as a JSON *string* inside the request body
 * (`{"content":"{\"schema\":…}"}`), so quotes are escaped once more. Measure that, in UTF-8 bytes.
 */
export function cardSize(card: unknown): number {
  return utf8.encode(JSON.stringify(JSON.stringify(card))).length;
}

/** Every object with a `tag` counts: components, and text elements such as each option's `plain_text`. */
export function countComponents(card: unknown): number {
  let count = 0;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (typeof value !== "object" || value === null) return;
    if (typeof (value as { tag?: unknown }).tag === "string") count += 1;
    for (const child of Object.values(value)) visit(child);
  };
  visit(card);
  return count;
}

const utf8 = new TextEncoder();

export type CardCheck = { ok: true; card: Card } | { ok: false; problems: string[] };

const ELEMENT_ID = /^[A-Za-z][A-Za-z0-9_]*$/;

/** Parses a card against the strict model, then checks the rules a schema cannot express. */
export function validateCard(input: unknown): CardCheck {
  const parsed = cardSchema.safeParse(input);
  if (!parsed.success) return { ok: false, problems: explain(input, parsed.error.issues).slice(0, 10) };
  const card = parsed.data;
  const problems: string[] = [];
  const names = new Map<string, number>();
  const elementIds = new Map<string, number>();

  const visit = (node: CardNode, path: string, depth: number, inForm: boolean): void => {
    if (depth > CARD_LIMITS.maxDepth)
      problems.push(`${path}: containers nest deeper than ${CARD_LIMITS.maxDepth} levels`);
    if (node.element_id !== undefined) {
      elementIds.set(node.element_id, (elementIds.get(node.element_id) ?? 0) + 1);
      if (!ELEMENT_ID.test(node.element_id) || node.element_id.length > CARD_LIMITS.maxElementIdChars) {
        problems.push(
          `${path}: element_id "${node.element_id}" must be letters, digits and _, start with a letter, at most 20 chars`,
        );
      }
    }
    switch (node.tag) {
      case "form": {
        if (depth !== 1) problems.push(`${path}: a form may only sit at the card root`);
        if (inForm) problems.push(`${path}: a form cannot contain a form`);
        count(names, node.name);
        if (!containsSubmit(node.elements))
          problems.push(`${path}: form "${node.name}" has no submit button`);
        node.elements.forEach((child, i) => {
          visit(child, `${path}.elements.${i}`, depth + 1, true);
        });
        return;
      }
      case "column_set":
        for (const [c, column] of node.columns.entries()) {
          for (const [i, child] of column.elements.entries()) {
            if (child.tag === "form")
              problems.push(`${path}.columns.${c}.elements.${i}: a column cannot contain a form`);
            visit(child, `${path}.columns.${c}.elements.${i}`, depth + 1, inForm);
          }
        }
        return;
      case "collapsible_panel":
        node.elements.forEach((child, i) => {
          if (child.tag === "form")
            problems.push(`${path}.elements.${i}: a collapsible panel cannot contain a form`);
          visit(child, `${path}.elements.${i}`, depth + 1, inForm);
        });
        return;
      case "select_static":
      case "multi_select_static":
      case "input":
        checkField(node, path, inForm);
        return;
      case "button":
        if (node.text.content.length > CARD_LIMITS.maxButtonTextChars)
          problems.push(`${path}: button text over 100 chars`);
        if (inForm) {
          if (!node.name) problems.push(`${path}: a button inside a form needs a name`);
          if (!node.form_action_type) problems.push(`${path}: a button inside a form needs form_action_type`);
        } else if (node.form_action_type) {
          problems.push(`${path}: form_action_type outside a form`);
        }
        if (node.name) count(names, node.name);
        return;
      default:
        return;
    }
  };

  const checkField = (
    node: Extract<CardNode, { tag: "select_static" | "multi_select_static" | "input" }>,
    path: string,
    inForm: boolean,
  ): void => {
    if (node.name === "") problems.push(`${path}: a field needs a non-empty name`);
    count(names, node.name);
    if (node.placeholder.content.length > CARD_LIMITS.maxPlaceholderChars)
      problems.push(`${path}: placeholder over 100 chars`);
    if (node.tag === "multi_select_static" && !inForm)
      problems.push(`${path}: multi_select_static must sit inside a form`);
    if (node.tag !== "input") {
      const values = node.options.map((option) => option.value);
      if (new Set(values).size !== values.length) problems.push(`${path}: option values must be unique`);
      if (
        node.tag === "multi_select_static" &&
        node.selected_values.some((value) => !values.includes(value))
      ) {
        problems.push(`${path}: selected_values must be option values`);
      }
    }
  };

  card.body.elements.forEach((node, i) => {
    visit(node, `body.elements.${i}`, 1, false);
  });
  for (const [name, times] of names)
    if (times > 1)
      problems.push(`name "${name}" is used ${times} times; names must be unique across the card`);
  for (const [id, times] of elementIds)
    if (times > 1) problems.push(`element_id "${id}" is used ${times} times`);
  const size = cardSize(card);
  if (size > CARD_LIMITS.maxBytes)
    problems.push(`card is ${size} bytes; the limit is ${CARD_LIMITS.maxBytes}`);
  const components = countComponents(card);
  if (components > CARD_LIMITS.maxComponents) {
    problems.push(`card has ${components} components; the limit is ${CARD_LIMITS.maxComponents}`);
  }
  return problems.length === 0 ? { ok: true, card } : { ok: false, problems };
}

/**
 * A value that matches no member of a union (a component, a button behavior) gets zod's bare
 * "Invalid input". Explain it with the member its discriminator (`tag` or `type`) picked, so the message
 * names the field that is wrong, e.g. `…elements.0.required` or `…behaviors.0.value`.
 */
function explain(input: unknown, issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.flatMap((issue) => {
    const where = issue.path.map(String).join(".");
    if (issue.code !== "invalid_union") return [`${where}: ${issue.message}`];
    const node = valueAt(input, issue.path);
    const picked = issue.errors.filter(
      (branch) =>
        !branch.some(
          (inner) => inner.path.length === 1 && (inner.path[0] === "tag" || inner.path[0] === "type"),
        ),
    );
    if (picked.length === 1 && picked[0]) return explain(node, picked[0]).map((line) => `${where}.${line}`);
    const tag = typeof node === "object" && node !== null ? (node as { tag?: unknown; type?: unknown }) : {};
    const kind = tag.tag ?? tag.type;
    return [
      `${where}: unsupported ${tag.tag !== undefined ? "component tag" : "kind"} ${JSON.stringify(kind)}`,
    ];
  });
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = root;
  for (const key of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function containsSubmit(nodes: readonly CardNode[]): boolean {
  return nodes.some((node) => {
    if (node.tag === "button") return node.form_action_type === "submit";
    if (node.tag === "column_set") return node.columns.some((column) => containsSubmit(column.elements));
    if (node.tag === "collapsible_panel") return containsSubmit(node.elements);
    return false;
  });
}

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
