import type { Card } from "../../cards/model.ts";

/**
 * How the CardKit transport reads a card: the entity's copy of it (streaming mode set, an `element_id` on
 * every top-level markdown element so its text can stream), its forms, and whether two copies differ only in
 * markdown text.
 */
export type CardJson = Record<string, unknown> & { body: { elements: Record<string, unknown>[] } };

/** Ids the transport gives markdown elements that have none (letters, digits and _, at most 20 chars). */
const idFor = (index: number) => `ck_md_${index}`;

export function entityCard(card: Card, streaming: boolean): CardJson {
  const copy = structuredClone(card) as unknown as CardJson;
  copy.config = { ...(copy.config as Record<string, unknown>), streaming_mode: streaming };
  copy.body.elements = copy.body.elements.map((element, index) =>
    element.tag === "markdown" && element.element_id === undefined
      ? { ...element, element_id: idFor(index) }
      : element,
  );
  return copy;
}

/** Every form on the card, as JSON: equal strings mean the forms were left as they were. */
export function formsOf(card: CardJson | Card): string {
  const forms: unknown[] = [];
  walk(card.body, (node) => {
    if (node.tag === "form") forms.push(node);
  });
  return forms.length === 0 ? "" : JSON.stringify(forms);
}

export function hasForm(card: CardJson | Card): boolean {
  return formsOf(card) !== "";
}

/**
 * The markdown elements whose text changed, when nothing else did (header, config, other elements, order):
 * those can stream; undefined when the structure changed and only a full update shows it.
 */
export function streamedChanges(
  before: CardJson,
  after: CardJson,
): { elementId: string; text: string }[] | undefined {
  const diff = textDiff(before, after);
  return diff && !diff.rest ? diff.changes : undefined;
}

/**
 * The one rule of what can stream, for a pair (shown, next): the markdown elements whose text changed
 * (`changes`), and whether anything else changed too (`rest`: the header, config, another element's props),
 * which only a full update shows. Undefined when the elements themselves differ (count, order, tags, ids):
 * then no element update is known to land on the element it means, and only a full update goes.
 */
export function textDiff(
  before: CardJson,
  after: CardJson,
): { changes: { elementId: string; text: string }[]; rest: boolean } | undefined {
  const old = before.body.elements;
  const now = after.body.elements;
  if (old.length !== now.length) return undefined;
  if (now.some((e, i) => e.tag !== old[i]?.tag || e.element_id !== old[i]?.element_id)) return undefined;
  const blank = (card: CardJson) =>
    JSON.stringify({
      ...card,
      body: {
        elements: card.body.elements.map((e) => (e.tag === "markdown" ? { ...e, content: "" } : e)),
      },
    });
  const changes: { elementId: string; text: string }[] = [];
  now.forEach((element, index) => {
    if (element.tag !== "markdown" || old[index]?.content === element.content) return;
    if (typeof element.element_id !== "string" || typeof element.content !== "string") return;
    changes.push({ elementId: element.element_id, text: element.content });
  });
  return { changes, rest: blank(before) !== blank(after) };
}

/** `card` with the given markdown texts in place (what the entity shows after those element updates). */
export function withTexts(card: CardJson, changes: readonly { elementId: string; text: string }[]): CardJson {
  const texts = new Map(changes.map((c) => [c.elementId, c.text]));
  return {
    ...card,
    body: {
      ...card.body,
      elements: card.body.elements.map((e) =>
        typeof e.element_id === "string" && texts.has(e.element_id)
          ? { ...e, content: texts.get(e.element_id) }
          : e,
      ),
    },
  };
}

function walk(value: unknown, visit: (node: Record<string, unknown>) => void): void {
  if (Array.isArray(value)) for (const item of value) walk(item, visit);
  else if (typeof value === "object" && value !== null) {
    const node = value as Record<string, unknown>;
    if (typeof node.tag === "string") visit(node);
    for (const child of Object.values(node)) if (typeof child === "object") walk(child, visit);
  }
}
