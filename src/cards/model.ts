import { z } from "zod";
import { LOCALES } from "../strings/index.ts";

/**
 * A strict model of the Card JSON 2.0 subset this service emits (feishu-platform §1.1–1.2).
 * 2.0 rejects unknown properties, so every object here is strict: a typo fails our tests, not a send.
 * Pure: no I/O imports.
 */

const px = z.string().regex(/^(-?\d{1,3}px)( -?\d{1,3}px){0,3}$|^(small|medium|large|extra_large)$/);
const elementId = z.string();
const common = { element_id: elementId.optional(), margin: px.optional() };

/**
 * The same text per client language (配置卡片多语言: `content` → `i18n_content` on any plain_text or markdown
 * text); `content` stays as what a client in another language sees. Built by cards/i18n.ts.
 */
const i18nContent = z.partialRecord(z.enum(LOCALES), z.string()).optional();

export const plainText = z.strictObject({
  tag: z.literal("plain_text"),
  content: z.string(),
  i18n_content: i18nContent,
});
const richTitle = z.strictObject({
  tag: z.enum(["plain_text", "markdown"]),
  content: z.string(),
  i18n_content: i18nContent,
});

/** Header `template` colours (标题 page, 标题主题样式枚举). Not the same list as tag colours. */
export const TEMPLATES = [
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
] as const;

/**
 * `text_tag.color` (标题 page, 后缀标签颜色枚举): 13 values with `neutral` and `lime`, but no `grey` and
 * no `default`. Reusing the template list here once sent `grey`, which Feishu refuses.
 */
export const TAG_COLORS = [
  "neutral",
  "blue",
  "turquoise",
  "lime",
  "orange",
  "violet",
  "indigo",
  "wathet",
  "green",
  "yellow",
  "red",
  "purple",
  "carmine",
] as const;
export type TagColor = (typeof TAG_COLORS)[number];
export type Template = (typeof TEMPLATES)[number];

/** The tag colour that reads like a header template: grey headers get neutral tags. */
export function tagColorFor(template: Template): TagColor {
  if (template === "grey" || template === "default") return "neutral";
  return template;
}

// Panel borders take the general colour enumeration (颜色枚举值); we only ever use a few of them.
const borderColor = z.enum(["grey", "blue", "green", "orange", "red"]);

const callbackBehavior = z.strictObject({
  type: z.literal("callback"),
  // The SDK only accepts object values (feishu-platform §1.2 button).
  value: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
});
const openUrlBehavior = z.strictObject({ type: z.literal("open_url"), default_url: z.url() });

export const markdownNode = z.strictObject({
  tag: z.literal("markdown"),
  content: z.string(),
  i18n_content: i18nContent,
  text_size: z.enum(["normal", "heading", "notation"]).optional(),
  ...common,
});

export const hrNode = z.strictObject({ tag: z.literal("hr"), ...common });

export const buttonNode = z.strictObject({
  tag: z.literal("button"),
  name: z.string().optional(),
  text: plainText,
  type: z.enum([
    "default",
    "primary",
    "danger",
    "text",
    "primary_text",
    "danger_text",
    "primary_filled",
    "danger_filled",
    "laser",
  ]),
  size: z.enum(["tiny", "small", "medium", "large"]).optional(),
  width: z.enum(["default", "fill"]).optional(),
  form_action_type: z.enum(["submit", "reset"]).optional(),
  /** 二次确认弹窗 (D-button): the client asks before it sends the callback; both texts are required. */
  confirm: z.strictObject({ title: plainText, text: plainText }).optional(),
  behaviors: z.array(z.union([callbackBehavior, openUrlBehavior])).min(1),
  ...common,
});

const selectOption = z.strictObject({ text: plainText, value: z.string() });

export const selectNode = z.strictObject({
  tag: z.literal("select_static"),
  name: z.string(),
  required: z.boolean(),
  placeholder: plainText,
  width: z.enum(["default", "fill"]).optional(),
  /** 1-based; 0 shows none (D-select). Used to pre-fill a form after a submit that did not complete it. */
  initial_index: z.number().int().min(0).optional(),
  options: z.array(selectOption).min(1),
  ...common,
});

export const multiSelectNode = z.strictObject({
  tag: z.literal("multi_select_static"),
  name: z.string(),
  required: z.boolean(),
  placeholder: plainText,
  width: z.enum(["default", "fill"]).optional(),
  selected_values: z.array(z.string()),
  options: z.array(selectOption).min(1),
  ...common,
});

export const inputNode = z.strictObject({
  tag: z.literal("input"),
  name: z.string(),
  required: z.boolean(),
  placeholder: plainText,
  max_length: z.number().int().min(1).max(1000).optional(),
  width: z.enum(["default", "fill"]).optional(),
  /** Pre-filled text (D-input), e.g. the 其他 answer a failed submit carried. */
  default_value: z.string().max(1000).optional(),
  ...common,
});

export type CardNode =
  | z.infer<typeof markdownNode>
  | z.infer<typeof hrNode>
  | z.infer<typeof buttonNode>
  | z.infer<typeof selectNode>
  | z.infer<typeof multiSelectNode>
  | z.infer<typeof inputNode>
  | ColumnSetNode
  | PanelNode
  | FormNode;

export interface ColumnNode {
  tag: "column";
  width?: "auto" | "weighted";
  weight?: number;
  vertical_align?: "top" | "center" | "bottom";
  elements: CardNode[];
}
export interface ColumnSetNode {
  tag: "column_set";
  flex_mode?: "none" | "stretch" | "flow" | "bisect" | "trisect";
  horizontal_spacing?: string;
  columns: ColumnNode[];
  element_id?: string;
  margin?: string;
}
export interface PanelNode {
  tag: "collapsible_panel";
  expanded: boolean;
  header: { title: z.infer<typeof richTitle> };
  border?: { color: z.infer<typeof borderColor>; corner_radius?: string };
  elements: CardNode[];
  element_id?: string;
  margin?: string;
}
export interface FormNode {
  tag: "form";
  name: string;
  elements: CardNode[];
  element_id?: string;
  margin?: string;
}

export const cardNode: z.ZodType<CardNode> = z.lazy(() =>
  z.union([
    markdownNode,
    hrNode,
    buttonNode,
    selectNode,
    multiSelectNode,
    inputNode,
    columnSetNode,
    panelNode,
    formNode,
  ]),
);

const columnNode: z.ZodType<ColumnNode> = z.strictObject({
  tag: z.literal("column"),
  width: z.enum(["auto", "weighted"]).optional(),
  weight: z.number().int().min(1).max(5).optional(),
  vertical_align: z.enum(["top", "center", "bottom"]).optional(),
  elements: z.array(cardNode),
});

const columnSetNode: z.ZodType<ColumnSetNode> = z.strictObject({
  tag: z.literal("column_set"),
  flex_mode: z.enum(["none", "stretch", "flow", "bisect", "trisect"]).optional(),
  horizontal_spacing: px.optional(),
  columns: z.array(columnNode).min(1),
  ...common,
});

const panelNode: z.ZodType<PanelNode> = z.strictObject({
  tag: z.literal("collapsible_panel"),
  expanded: z.boolean(),
  header: z.strictObject({ title: richTitle }),
  border: z.strictObject({ color: borderColor, corner_radius: px.optional() }).optional(),
  elements: z.array(cardNode),
  ...common,
});

const formNode: z.ZodType<FormNode> = z.strictObject({
  tag: z.literal("form"),
  name: z.string().min(1),
  elements: z.array(cardNode).min(1),
  ...common,
});

const textTag = z.strictObject({ tag: z.literal("text_tag"), text: plainText, color: z.enum(TAG_COLORS) });

export const cardSchema = z.strictObject({
  schema: z.literal("2.0"),
  config: z.strictObject({
    update_multi: z.literal(true),
    width_mode: z.enum(["default", "compact", "fill"]).optional(),
    summary: z.strictObject({ content: z.string(), i18n_content: i18nContent }).optional(),
    /** The languages the card is written in (config.locales), set with every `i18n_content`. */
    locales: z.array(z.enum(LOCALES)).min(1).optional(),
    /**
     * CardKit entities only (feishu-platform §1.1, §3.5): text updates type out while on. The builders never
     * set it; the CardKit transport does on its copy, and a card shown from an entity carries it.
     */
    streaming_mode: z.boolean().optional(),
  }),
  header: z
    .strictObject({
      title: plainText,
      subtitle: plainText.optional(),
      template: z.enum(TEMPLATES),
      text_tag_list: z.array(textTag).max(3).optional(),
      /** The tags per language (标题 page); set instead of `text_tag_list` when a tag is translated. */
      i18n_text_tag_list: z.partialRecord(z.enum(LOCALES), z.array(textTag).max(3)).optional(),
    })
    .optional(),
  body: z.strictObject({ elements: z.array(cardNode) }),
});

export type Card = z.infer<typeof cardSchema>;
export type TextTag = z.infer<typeof textTag>;
