import type { z } from "zod";
import { CARD_RULES, type CardRuleId, isRuleId } from "./rules.ts";

/** One broken rule, where it is broken, and the card sub-code Feishu would answer with. */
export interface CardViolation {
  rule: CardRuleId;
  /** Where in the card, e.g. `body.elements[2].elements[0].color`. */
  path: string;
  message: string;
  subCode: number;
}

/** Collects violations while the checker walks a card. */
export class Report {
  readonly violations: CardViolation[] = [];

  add(rule: CardRuleId, path: string, message: string): void {
    this.violations.push({ rule, path, message, subCode: CARD_RULES[rule].subCode });
  }

  /** Parses `value` with a component's schema; each zod issue becomes the rule its message names. */
  parse(schema: z.ZodType, value: unknown, path: string): boolean {
    const result = schema.safeParse(value);
    if (result.success) return true;
    for (const issue of result.error.issues) {
      const where = join(path, issue.path);
      if (issue.code === "unrecognized_keys") {
        const keys = issue.keys.map((key) => `"${key}"`).join(", ");
        this.add(
          "unknown-property",
          where,
          `unsupported propert${issue.keys.length > 1 ? "ies" : "y"} ${keys}`,
        );
        continue;
      }
      const tagged = /^\[([a-z-]+)\] (.*)$/s.exec(issue.message);
      const rule = tagged?.[1];
      if (rule && isRuleId(rule))
        this.add(rule, where, `${tagged[2] ?? ""} (got ${shown(value, issue.path)})`);
      else this.add("property-value", where, `${issue.message} (got ${shown(value, issue.path)})`);
    }
    return false;
  }
}

/** `body.elements` + `[2, "text"]` → `body.elements[2].text`. */
export function join(base: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => {
    if (typeof key === "number") return `${acc}[${key}]`;
    return acc === "" ? String(key) : `${acc}.${String(key)}`;
  }, base);
}

function shown(root: unknown, path: readonly PropertyKey[]): string {
  let value: unknown = root;
  for (const key of path) {
    if (typeof value !== "object" || value === null) return "nothing";
    value = Reflect.get(value, key);
  }
  if (value === undefined) return "nothing";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/** The one-line reason the emulator puts in its error: the first violation, naming its rule. */
export function describe(violations: readonly CardViolation[]): string {
  const [first] = violations;
  if (!first) return "invalid card";
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : "";
  return `[${first.rule}] ${first.path || "card"}: ${first.message}${more}`;
}
