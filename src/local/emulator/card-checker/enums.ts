/**
 * Enumerations copied by hand from the Card JSON 2.0 doc pages (keys in docs/feishu-platform.md §0).
 * Kept apart from `src/cards/model.ts` on purpose: the checker must not inherit a misreading. The console's
 * card renderer (local/console/public), the emulator's client, renders by these same lists. Pure, imports
 * nothing: the console's browser bundle takes it.
 */

/** 标题 page, 标题主题样式枚举. */
export const HEADER_TEMPLATES = [
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

/** 标题 page, 后缀标签颜色枚举 (also the markdown `<text_tag>` colours on the rich-text page). */
export const TEXT_TAG_COLORS = [
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

/** 颜色枚举值: each hue alone or with a shade, plus a few fixed names. */
const HUES = [
  "blue",
  "carmine",
  "green",
  "indigo",
  "lime",
  "grey",
  "orange",
  "purple",
  "red",
  "sunflower",
  "turquoise",
  "violet",
  "wathet",
  "yellow",
] as const;
const SHADES = ["50", "100", "200", "300", "350", "400", "500", "600", "700", "800", "900"];
const GREY_EXTRA = ["00", "650", "950", "1000"];
const RGBA = /^rgba\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*(0|1|0?\.\d+|1\.0+)\s*\)$/;

export const NAMED_COLORS: ReadonlySet<string> = new Set([
  "default",
  "bg-white",
  "white",
  ...HUES,
  ...HUES.flatMap((hue) => SHADES.map((shade) => `${hue}-${shade}`)),
  ...GREY_EXTRA.map((shade) => `grey-${shade}`),
]);

/** A colour attribute: a name from the enumeration, RGBA syntax, or a key declared in `config.style.color`. */
export function isColor(value: string, customColors: ReadonlySet<string>): boolean {
  return NAMED_COLORS.has(value) || RGBA.test(value) || customColors.has(value);
}

/** 配置卡片多语言: the 16 languages cards can carry. */
export const LOCALES = [
  "zh_cn",
  "en_us",
  "ja_jp",
  "zh_hk",
  "zh_tw",
  "id_id",
  "vi_vn",
  "th_th",
  "pt_br",
  "es_es",
  "ko_kr",
  "de_de",
  "fr_fr",
  "it_it",
  "ru_ru",
  "ms_my",
] as const;

/** 按钮 page. */
export const BUTTON_TYPES = [
  "default",
  "primary",
  "danger",
  "text",
  "primary_text",
  "danger_text",
  "primary_filled",
  "danger_filled",
  "laser",
] as const;
export const BUTTON_SIZES = ["tiny", "small", "medium", "large"] as const;

/** 分栏 page. */
export const FLEX_MODES = ["none", "stretch", "flow", "bisect", "trisect"] as const;

export const ALIGN_H = ["left", "center", "right"] as const;
export const ALIGN_V = ["top", "center", "bottom"] as const;
export const DIRECTIONS = ["vertical", "horizontal"] as const;

/**
 * Component tags of 2.0 (组件概述) that this checker does not model. A card using one is refused with a
 * message saying so: the emulator cannot vouch for it, and the bot never sends them.
 */
export const UNMODELLED_TAGS: ReadonlySet<string> = new Set([
  "interactive_container",
  "img",
  "img_combination",
  "person",
  "person_list",
  "chart",
  "table",
  "audio",
  "overflow",
  "select_person",
  "multi_select_person",
  "date_picker",
  "picker_time",
  "picker_datetime",
  "select_img",
  "checker",
]);

/** Tags 2.0 removed (版本更新说明: 废弃备注组件 & 交互模块). Feishu answers 200861. */
export const V1_ONLY_TAGS: ReadonlySet<string> = new Set(["note", "action"]);
