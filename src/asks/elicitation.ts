import { z } from "zod";

/**
 * An MCP `elicitation/create` as the second kind of ask (the first is `ask_user_questions`): the server's
 * flat form schema turned into fields a card can show, and a submitted card form turned back into content
 * of the schema's shape. Pure: no I/O (shared by the MCP client and the card).
 */

/** What the form shows filled in at first: text for an input, option indexes for a choice. */
export interface FieldInitial {
  initial?: { text: string } | { indexes: number[] };
}

export type ElicitField = FieldInitial &
  (
    | { key: string; title: string; description?: string; required: boolean; kind: "text" }
    | {
        key: string;
        title: string;
        description?: string;
        required: boolean;
        kind: "number";
        integer: boolean;
      }
    | { key: string; title: string; description?: string; required: boolean; kind: "boolean" }
    | {
        key: string;
        title: string;
        description?: string;
        required: boolean;
        kind: "choice" | "multi";
        options: { value: string; label: string }[];
      }
  );

export interface ElicitationAsk {
  /** Which MCP server asks (the card names it). */
  server: string;
  message: string;
  /** Form mode: the fields; URL mode: none, and `url` to open. */
  fields: ElicitField[];
  url?: string;
  /** URL mode: the host `url` really opens, shown beside the link (harness/agents/mcp/elicit-url.ts). */
  urlHost?: { unicode: string; ascii: string };
}

/** What goes back to the server (MCP ElicitResult). */
export type ElicitResponse =
  | { action: "accept"; content?: Record<string, string | number | boolean | string[]> }
  | { action: "decline" | "cancel" };

/** `default` is only a pre-fill: a value of the wrong type is dropped rather than refusing the form. */
const titled = {
  title: z.string().optional(),
  description: z.string().optional(),
  default: z.unknown().optional(),
};
const enumOption = z.object({ const: z.string(), title: z.string().optional() });
/** The primitive property shapes the MCP spec allows in `requestedSchema` (no nesting). */
const propertySchema = z.union([
  z.object({ type: z.literal("boolean"), ...titled }),
  z.object({ type: z.enum(["number", "integer"]), ...titled }),
  z.object({
    type: z.literal("string"),
    enum: z.array(z.string()).min(1),
    enumNames: z.array(z.string()).optional(),
    ...titled,
  }),
  z.object({ type: z.literal("string"), oneOf: z.array(enumOption).min(1), ...titled }),
  z.object({ type: z.literal("string"), ...titled }),
  z.object({
    type: z.literal("array"),
    items: z.union([
      z.object({ enum: z.array(z.string()).min(1) }),
      z.object({ anyOf: z.array(enumOption).min(1) }),
    ]),
    ...titled,
  }),
]);
const requestedSchema = z.object({
  properties: z.record(z.string(), propertySchema),
  required: z.array(z.string()).optional(),
});

/** The schema's properties as fields, or what in it a card cannot show. */
export function elicitFields(
  schema: unknown,
): { ok: true; fields: ElicitField[] } | { ok: false; error: string } {
  const parsed = requestedSchema.safeParse(schema);
  if (!parsed.success)
    return {
      ok: false,
      error: `unsupported requestedSchema: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    };
  const required = new Set(parsed.data.required ?? []);
  const fields = Object.entries(parsed.data.properties).map(([key, p]) =>
    withInitial(toField(key, p, required), p.default),
  );
  return { ok: true, fields };
}

function toField(key: string, p: z.infer<typeof propertySchema>, required: Set<string>): ElicitField {
  const base = {
    key,
    title: p.title ?? key,
    ...(p.description ? { description: p.description } : {}),
    required: required.has(key),
  };
  if (p.type === "boolean") return { ...base, kind: "boolean" };
  if (p.type === "number" || p.type === "integer")
    return { ...base, kind: "number", integer: p.type === "integer" };
  if (p.type === "array") {
    const items =
      "enum" in p.items ? p.items.enum.map((v) => ({ value: v, label: v })) : p.items.anyOf.map(fromOption);
    return { ...base, kind: "multi", options: items };
  }
  if ("enum" in p)
    return {
      ...base,
      kind: "choice",
      options: p.enum.map((v, i) => ({ value: v, label: p.enumNames?.[i] ?? v })),
    };
  if ("oneOf" in p) return { ...base, kind: "choice", options: p.oneOf.map(fromOption) };
  return { ...base, kind: "text" };
}

function withInitial(field: ElicitField, value: unknown): ElicitField {
  if (value === undefined) return field;
  switch (field.kind) {
    case "text":
      return typeof value === "string" ? { ...field, initial: { text: value } } : field;
    case "number":
      return typeof value === "number" ? { ...field, initial: { text: String(value) } } : field;
    case "boolean":
      return typeof value === "boolean" ? { ...field, initial: { indexes: [value ? 0 : 1] } } : field;
    case "choice":
    case "multi": {
      const wanted = Array.isArray(value) ? value : [value];
      const indexes = field.options.flatMap((option, k) => (wanted.includes(option.value) ? [k] : []));
      return indexes.length > 0 ? { ...field, initial: { indexes } } : field;
    }
  }
}

function fromOption(option: { const: string; title?: string | undefined }) {
  return { value: option.const, label: option.title ?? option.const };
}

export type ElicitMapping =
  | { ok: true; content: Record<string, string | number | boolean | string[]> }
  | { ok: false; problem: "missing" | "number"; field: ElicitField };

/**
 * A submitted form's values (field index → raw value, as cards/form-fields.ts reads them out of a
 * `form_value`) as content in the schema's shape. Choices travel as option indexes (as in the ask form); a
 * number must parse; a required field must be there. A bad value is a result, not a throw.
 */
export function mapElicitForm(
  fields: readonly ElicitField[],
  values: ReadonlyMap<number, unknown>,
): ElicitMapping {
  const read = (j: number): unknown => values.get(j);
  const content: Record<string, string | number | boolean | string[]> = {};
  for (const [j, field] of fields.entries()) {
    const raw = read(j);
    const value = fieldValue(field, raw);
    if (value === "bad") return { ok: false, problem: "number", field };
    if (value === undefined) {
      if (field.required) return { ok: false, problem: "missing", field };
      continue;
    }
    content[field.key] = value;
  }
  return { ok: true, content };
}

function fieldValue(
  field: ElicitField,
  raw: unknown,
): string | number | boolean | string[] | undefined | "bad" {
  const text = typeof raw === "string" ? raw.trim() : "";
  switch (field.kind) {
    case "text":
      return text === "" ? undefined : text;
    case "number": {
      if (text === "") return undefined;
      const n = Number(text.replace(/,/g, ""));
      if (!Number.isFinite(n) || (field.integer && !Number.isInteger(n))) return "bad";
      return n;
    }
    case "boolean":
      return text === "yes" ? true : text === "no" ? false : undefined;
    case "choice":
      return field.options[Number.parseInt(text, 10)]?.value ?? undefined;
    case "multi": {
      const list = Array.isArray(raw) ? raw : [];
      const chosen = list.flatMap((item) => {
        const option = typeof item === "string" ? field.options[Number.parseInt(item, 10)] : undefined;
        return option ? [option.value] : [];
      });
      return chosen.length === 0 ? undefined : [...new Set(chosen)];
    }
  }
}
