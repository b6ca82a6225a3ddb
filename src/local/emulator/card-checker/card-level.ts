import { z } from "zod";
import { layout, type SchemaContext } from "./components.ts";
import { HEADER_TEMPLATES, LOCALES, TEXT_TAG_COLORS } from "./enums.ts";
import { box, elementId, i18n, icon, oneOf, plainText, ruled, textElement } from "./values.ts";

/**
 * The card-level objects: `header` (标题 page), `config` and `card_link` (结构 page), `body`. Strict, like
 * the components: 2.0 refuses properties it does not support.
 */

/** The text_tag element of `header.text_tag_list`. */
const textTag = z.strictObject({
  tag: z.literal("text_tag"),
  element_id: elementId.optional(),
  text: plainText.optional(),
  color: oneOf(TEXT_TAG_COLORS, "tag-color").optional(),
});

export function headerSchema(ctx: SchemaContext) {
  return z.strictObject({
    title: textElement(["plain_text", "lark_md"], {}),
    subtitle: textElement(["plain_text", "lark_md"]).optional(),
    text_tag_list: z.array(textTag).optional(),
    i18n_text_tag_list: i18n(z.array(textTag)).optional(),
    template: oneOf(HEADER_TEMPLATES, "header-template").optional(),
    icon: icon(ctx.customColors).optional(),
    padding: box(0, 99).optional(),
  });
}

const perPlatform = z.strictObject({
  default: z.number().optional(),
  android: z.number().optional(),
  ios: z.number().optional(),
  pc: z.number().optional(),
});

export const configSchema = z.strictObject({
  streaming_mode: z.boolean().optional(),
  streaming_config: z
    .strictObject({
      print_frequency_ms: perPlatform.optional(),
      print_step: perPlatform.optional(),
      print_strategy: oneOf(["fast", "delay"]).optional(),
    })
    .optional(),
  summary: z
    .strictObject({ content: z.string().optional(), i18n_content: i18n(z.string()).optional() })
    .optional(),
  locales: z.array(oneOf(LOCALES)).optional(),
  enable_forward: z.boolean().optional(),
  // "JSON 2.0 暂时仅支持设为 true".
  update_multi: z
    .literal(true, {
      error: ruled("update-multi", "2.0 cards are shared cards: update_multi can only be true"),
    })
    .optional(),
  width_mode: oneOf(["default", "compact", "fill"]).optional(),
  use_custom_translation: z.boolean().optional(),
  enable_forward_interaction: z.boolean().optional(),
  style: z
    .strictObject({
      text_size: z
        .record(
          z.string(),
          z.strictObject({
            default: z.string().optional(),
            pc: z.string().optional(),
            mobile: z.string().optional(),
          }),
        )
        .optional(),
      color: z
        .record(z.string(), z.strictObject({ light_mode: z.string(), dark_mode: z.string() }))
        .optional(),
    })
    .optional(),
});

export const cardLinkSchema = z.strictObject({
  url: z.string().optional(),
  pc_url: z.string().optional(),
  ios_url: z.string().optional(),
  android_url: z.string().optional(),
});

export const bodySchema = z.strictObject({ ...layout, elements: z.array(z.unknown()).optional() });
