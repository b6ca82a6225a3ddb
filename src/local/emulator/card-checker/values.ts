import { z } from "zod";
import { isColor, LOCALES } from "./enums.ts";
import type { CardRuleId } from "./rules.ts";

/**
 * Property value types shared by the component schemas, each written from the value ranges the doc pages
 * give. A refusal's message starts with `[rule-id]`, which the checker turns into the rule it names.
 */

export const ruled = (rule: CardRuleId, text: string): string => `[${rule}] ${text}`;

const PX = /^(-?\d+)px$/;

/** One length token: `0` or an integer `Npx` within [min, max]. */
function lengthOk(token: string, min: number, max: number): boolean {
  if (token === "0") return true;
  const match = PX.exec(token);
  if (!match?.[1]) return false;
  const value = Number(match[1]);
  return value >= min && value <= max;
}

/** margin / padding: one, two or four lengths separated by spaces (标题/富文本 pages: 单值、双值、多值). */
export function box(min: number, max: number) {
  return z.string().refine(
    (value) => {
      const tokens = value.trim().split(/\s+/);
      return [1, 2, 4].includes(tokens.length) && tokens.every((token) => lengthOk(token, min, max));
    },
    { error: ruled("property-value", `expected 1, 2 or 4 lengths in [${min},${max}]px, like "4px 0"`) },
  );
}

export const margin = box(-99, 99);
export const padding = box(-99, 99);

/**
 * vertical_spacing / horizontal_spacing: a keyword or [0,99]px. `default` is not in the field tables, but the
 * docs' own 2.0 examples use it (分栏, 输入框, 下拉选择-多选, 普通文本 pages), so Feishu takes it.
 */
export const spacing = z
  .string()
  .refine(
    (value) =>
      ["default", "small", "medium", "large", "extra_large"].includes(value) || lengthOk(value, 0, 99),
    { error: ruled("property-value", "expected default|small|medium|large|extra_large or [0,99]px") },
  );

/** A width: one of the keywords, or `Npx` with N in [min, max]. */
export function width(keywords: readonly string[], min: number, max = Number.POSITIVE_INFINITY) {
  const range = max === Number.POSITIVE_INFINITY ? `[${min},∞)px` : `[${min},${max}]px`;
  return z.string().refine((value) => keywords.includes(value) || lengthOk(value, min, max), {
    error: ruled("property-value", `expected ${keywords.join("|")} or ${range}`),
  });
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  rule: CardRuleId = "property-value",
) {
  return z.enum(values, { error: ruled(rule, `expected one of ${values.join(", ")}`) });
}

/** Colour attributes; `custom` holds the keys the card declares in `config.style.color`. */
export function color(custom: ReadonlySet<string>) {
  return z.string().refine((value) => isColor(value, custom), {
    error: ruled("color", "not a colour: use default, an enumeration name (grey, blue-500, …) or rgba(…)"),
  });
}

/** `i18n_content`-style maps: a language code to a value. */
export function i18n<T extends z.ZodType>(value: T) {
  return z.partialRecord(oneOf(LOCALES), value);
}

export const elementId = z.string();

/** The documented text element: `{tag: "plain_text", content}` (a few places also allow other tags). */
export function textElement<const T extends readonly [string, ...string[]]>(
  tags: T,
  extra: z.ZodRawShape = {},
) {
  return z.strictObject({
    tag: oneOf(tags),
    content: z.string().optional(),
    i18n_content: i18n(z.string()).optional(),
    element_id: elementId.optional(),
    ...extra,
  });
}

export const plainText = textElement(["plain_text"]);

/**
 * A component's own `fallback` (what clients too old for it show): `"drop"`, or a `fallback_text` with a
 * plain_text `text` (音频 field table; the 表单容器 page's 2.0 example puts one on a form and an input).
 */
export const fallback = z.union([
  z.literal("drop"),
  z.strictObject({ tag: z.literal("fallback_text").optional(), text: plainText.optional() }),
]);

/** `icon` on text, buttons and options (standard_icon from the icon library, or custom_icon by img_key). */
export function icon(custom: ReadonlySet<string>, extra: z.ZodRawShape = {}) {
  return z.strictObject({
    tag: oneOf(["standard_icon", "custom_icon"]).optional(),
    token: z.string().optional(),
    color: color(custom).optional(),
    img_key: z.string().optional(),
    ...extra,
  });
}

/** `confirm` on buttons, selects and inputs: title and text are both required. */
export const confirm = z.strictObject({ title: plainText, text: plainText });

/** behaviors (配置卡片交互): open a link, or call back with an object value. */
export const behaviors = z.array(
  z.discriminatedUnion(
    "type",
    [
      z.strictObject({
        type: z.literal("open_url"),
        default_url: z.string(),
        android_url: z.string().optional(),
        ios_url: z.string().optional(),
        pc_url: z.string().optional(),
      }),
      z.strictObject({
        type: z.literal("callback"),
        // "开放平台 SDK 仅支持 object 类型的回传交互数据"; a submit without one fails with 200340 (field).
        value: z.record(z.string(), z.unknown(), {
          error: ruled("button-behaviors", "a callback behavior needs an object `value`"),
        }),
      }),
    ],
    { error: ruled("property-value", "a behavior's type is open_url or callback") },
  ),
);
