import { z } from "zod";
import { ALIGN_H, ALIGN_V, BUTTON_SIZES, BUTTON_TYPES, DIRECTIONS, FLEX_MODES } from "./enums.ts";
import {
  behaviors,
  color,
  confirm,
  elementId,
  fallback,
  i18n,
  icon,
  margin,
  oneOf,
  padding,
  plainText,
  ruled,
  spacing,
  textElement,
  width,
} from "./values.ts";

/**
 * The properties each modelled component may carry, one strict object per tag, from the field tables of
 * its doc page. Children (`elements`, `columns`) are only typed as arrays here; the walker checks them.
 * Strict because "在 JSON 2.0 版本中，传入不支持的属性将报错" (版本更新说明).
 */

export interface SchemaContext {
  /** Keys of `config.style.color`: components may use them as colours. */
  customColors: ReadonlySet<string>;
}

const children = z.array(z.unknown());
const common = { element_id: elementId.optional(), margin: margin.optional(), fallback: fallback.optional() };
const fieldWidth = width(["default", "fill"], 100);
export const layout = {
  direction: oneOf(DIRECTIONS).optional(),
  padding: padding.optional(),
  horizontal_spacing: spacing.optional(),
  vertical_spacing: spacing.optional(),
  horizontal_align: oneOf(ALIGN_H).optional(),
  vertical_align: oneOf(ALIGN_V).optional(),
};
const multiUrl = z.strictObject({
  multi_url: z.strictObject({
    url: z.string().optional(),
    android_url: z.string().optional(),
    ios_url: z.string().optional(),
    pc_url: z.string().optional(),
  }),
});

export function componentSchemas(ctx: SchemaContext): ReadonlyMap<string, z.ZodType> {
  const c = ctx.customColors;
  const option = z.strictObject({ text: plainText, icon: icon(c).optional(), value: z.string() });
  const fieldCommon = {
    ...common,
    name: z.string().optional(),
    required: z.boolean().optional(),
    disabled: z.boolean().optional(),
    placeholder: plainText.optional(),
    width: fieldWidth.optional(),
    behaviors: behaviors.optional(),
    confirm: confirm.optional(),
  };
  return new Map<string, z.ZodType>([
    [
      "markdown",
      z.strictObject({
        tag: z.literal("markdown"),
        ...common,
        content: z.string(),
        i18n_content: i18n(z.string()).optional(),
        // "如果你填写了其它值，卡片将展示为 normal": any string is accepted, custom sizes included.
        text_size: z.string().optional(),
        text_align: oneOf(ALIGN_H).optional(),
        icon: icon(c).optional(),
      }),
    ],
    [
      "div",
      z.strictObject({
        tag: z.literal("div"),
        ...common,
        width: width(["fill", "auto"], 16, 999).optional(),
        text: textElement(["plain_text", "lark_md"], {
          text_size: z.string().optional(),
          text_color: color(c).optional(),
          text_align: oneOf(ALIGN_H).optional(),
          lines: z.number().int().min(1).optional(),
        }).optional(),
        icon: icon(c).optional(),
      }),
    ],
    ["hr", z.strictObject({ tag: z.literal("hr"), ...common })],
    [
      "button",
      z.strictObject({
        tag: z.literal("button"),
        ...common,
        type: oneOf(BUTTON_TYPES).optional(),
        size: oneOf(BUTTON_SIZES).optional(),
        width: fieldWidth.optional(),
        text: plainText.optional(),
        icon: icon(c).optional(),
        hover_tips: plainText.optional(),
        disabled: z.boolean().optional(),
        disabled_tips: plainText.optional(),
        confirm: confirm.optional(),
        behaviors: behaviors.optional(),
        name: z.string().optional(),
        form_action_type: oneOf(["submit", "reset"]).optional(),
        // The form page keeps this historical spelling of form_action_type.
        action_type: oneOf(["link", "request", "multi", "form_submit", "form_reset"]).optional(),
      }),
    ],
    [
      "select_static",
      z.strictObject({
        tag: z.literal("select_static"),
        ...fieldCommon,
        type: oneOf(["default", "text"]).optional(),
        initial_option: z.string().optional(),
        initial_index: z.number().int().min(0).optional(),
        options: z.array(option).optional(),
      }),
    ],
    [
      "multi_select_static",
      z.strictObject({
        tag: z.literal("multi_select_static"),
        ...fieldCommon,
        type: oneOf(["default", "text"]).optional(),
        selected_values: z.array(z.string()).optional(),
        options: z.array(option).optional(),
      }),
    ],
    [
      "input",
      z.strictObject({
        tag: z.literal("input"),
        ...fieldCommon,
        disabled_tips: plainText.optional(),
        default_value: z.string().optional(),
        i18n_default_value: i18n(z.string()).optional(),
        max_length: z
          .number({ error: ruled("property-value", "max_length is an integer 1–1000") })
          .int()
          .min(1)
          .max(1000)
          .optional(),
        input_type: oneOf(["text", "multiline_text", "password"]).optional(),
        show_icon: z.boolean().optional(),
        rows: z.number().int().min(1).optional(),
        auto_resize: z.boolean().optional(),
        max_rows: z.number().optional(),
        label: plainText.optional(),
        label_position: oneOf(["top", "left"]).optional(),
        value: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
      }),
    ],
    [
      "column_set",
      z.strictObject({
        tag: z.literal("column_set"),
        ...common,
        horizontal_spacing: spacing.optional(),
        horizontal_align: oneOf(ALIGN_H).optional(),
        flex_mode: oneOf(FLEX_MODES).optional(),
        background_style: color(c).optional(),
        action: multiUrl.optional(),
        columns: children,
      }),
    ],
    [
      "column",
      z.strictObject({
        tag: z.literal("column"),
        ...common,
        ...layout,
        background_style: color(c).optional(),
        width: width(["auto", "weighted"], 16, 600).optional(),
        weight: z.number().int().min(1).max(5).optional(),
        elements: children.optional(),
        action: multiUrl.optional(),
      }),
    ],
    [
      "collapsible_panel",
      z.strictObject({
        tag: z.literal("collapsible_panel"),
        ...common,
        ...layout,
        expanded: z.boolean().optional(),
        background_color: color(c).optional(),
        header: z.strictObject({
          title: textElement(["plain_text", "markdown"]).optional(),
          background_color: color(c).optional(),
          width: oneOf(["fill", "auto", "auto_when_fold"]).optional(),
          vertical_align: oneOf(ALIGN_V).optional(),
          padding: padding.optional(),
          icon: icon(c, { size: z.string().optional() }).optional(),
          icon_position: oneOf(["left", "right", "follow_text"]).optional(),
          icon_expanded_angle: z
            .union([z.literal(-180), z.literal(-90), z.literal(90), z.literal(180)])
            .optional(),
        }),
        border: z
          .strictObject({ color: color(c).optional(), corner_radius: z.string().optional() })
          .optional(),
        elements: children.optional(),
      }),
    ],
    [
      "form",
      z.strictObject({ tag: z.literal("form"), ...common, ...layout, name: z.string(), elements: children }),
    ],
  ]);
}
