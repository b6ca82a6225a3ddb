/**
 * Icons drawn as inline SVG, so they look the same on a machine without an emoji font (CI, a fresh Linux
 * box), where ✅ ❌ ⏳ 🤖 show as empty boxes. Used by the console and, bundled into /web/session.js, by the session
 * page. Cards keep their emoji: Feishu's clients draw emoji from their own image set (the rich-text component
 * lists standard emoji among what it renders), so only our own renderings of a card swap them for these.
 */

const SVG = "http://www.w3.org/2000/svg";

/** Each icon on a 24×24 grid: a filled disc or badge, and white strokes on it. */
interface Shape {
  tag: string;
  [attribute: string]: string | number;
}
interface Icon {
  disc?: string;
  strokes?: string[];
  shapes?: Shape[];
}
export type IconName = "done" | "failed" | "running" | "pending" | "stopped" | "bot" | "group";

const ICONS: Record<IconName, Icon> = {
  done: { disc: "#2ea121", strokes: ["M7 12.5l3.2 3.2L17 9"] },
  failed: { disc: "#f54a45", strokes: ["M8.5 8.5l7 7", "M15.5 8.5l-7 7"] },
  running: { disc: "#3370ff", strokes: ["M12 7v5.2l3.2 2"] },
  // A plan entry not begun yet (ACP checklists): an empty grey square.
  pending: {
    shapes: [
      {
        tag: "rect",
        x: 4,
        y: 4,
        width: 16,
        height: 16,
        rx: 3,
        fill: "#fff",
        stroke: "#8f959e",
        "stroke-width": 2,
      },
    ],
  },
  // Stopped by a cancel or refused by the person: a grey disc with a square, not a failure's red cross.
  stopped: {
    disc: "#8f959e",
    shapes: [{ tag: "rect", x: 8.5, y: 8.5, width: 7, height: 7, rx: 1, fill: "#fff" }],
  },
  bot: {
    strokes: ["M12 3.5v3"],
    shapes: [
      { tag: "rect", x: 5, y: 7, width: 14, height: 11, rx: 3.5, fill: "#fff" },
      { tag: "circle", cx: 12, cy: 3.5, r: 1.4, fill: "#fff" },
      { tag: "circle", cx: 9.3, cy: 12.3, r: 1.5, fill: "#3370ff" },
      { tag: "circle", cx: 14.7, cy: 12.3, r: 1.5, fill: "#3370ff" },
      { tag: "rect", x: 2.5, y: 10.5, width: 2, height: 4, rx: 1, fill: "#fff" },
      { tag: "rect", x: 19.5, y: 10.5, width: 2, height: 4, rx: 1, fill: "#fff" },
    ],
  },
  group: {
    shapes: [
      { tag: "circle", cx: 9, cy: 9, r: 3.2, fill: "#fff" },
      { tag: "path", d: "M3 19.5c0-3.4 2.7-5.7 6-5.7s6 2.3 6 5.7z", fill: "#fff" },
      { tag: "circle", cx: 16.5, cy: 9.5, r: 2.6, fill: "#fff", opacity: 0.8 },
      {
        tag: "path",
        d: "M14.6 14.2c.6-.2 1.2-.3 1.9-.3 2.7 0 4.5 2 4.5 4.9h-4.8c0-1.9-.6-3.5-1.6-4.6z",
        fill: "#fff",
        opacity: 0.8,
      },
    ],
  },
};

/** The emoji our cards put at the start of a step line, and the icon that stands for each. */
export const STATUS_EMOJI: Record<string, IconName | undefined> = {
  "✅": "done",
  "❌": "failed",
  "⏳": "running",
  "⬜": "pending",
  // Without its variation selector: the keys make a character class, and the pattern takes the U+FE0F after.
  "\u23F9": "stopped",
};
/**
 * Accessible names when the caller gives none: the console's (it is the Chinese Feishu client's stand-in and
 * keeps its own words). The session page passes its own, in the bot's language (catalogue `web.icons`).
 */
const LABELS: Partial<Record<IconName, string>> = {
  done: "已完成",
  failed: "失败",
  running: "进行中",
  pending: "未开始",
  stopped: "已停止",
};

/** An <svg> for `name` (done, failed, running, bot, group), 1em square unless `size` says otherwise. */
export function svgIcon(
  name: IconName,
  { size = "1em", label }: { size?: string; label?: string } = {},
): SVGSVGElement {
  const icon = ICONS[name] ?? ICONS.running;
  const svg = document.createElementNS(SVG, "svg");
  setAll(svg, {
    viewBox: "0 0 24 24",
    width: size,
    height: size,
    class: `icon icon-${name}`,
    "data-icon": name,
  });
  const title = label ?? LABELS[name];
  if (title) setAll(svg, { role: "img", "aria-label": title });
  else svg.setAttribute("aria-hidden", "true");
  if (icon.disc) svg.append(shape({ tag: "circle", cx: 12, cy: 12, r: 10.5, fill: icon.disc }));
  for (const spec of icon.shapes ?? []) svg.append(shape(spec));
  for (const d of icon.strokes ?? []) {
    svg.append(
      shape({
        tag: "path",
        d,
        fill: "none",
        stroke: "#fff",
        "stroke-width": 2.2,
        "stroke-linecap": "round",
        "stroke-linejoin": "round",
      }),
    );
  }
  return svg;
}

/**
 * Swaps the status emoji in rendered card text for icons, in place. Only text nodes are touched, so nothing
 * a card says is ever parsed as markup.
 */
export function iconizeStatusEmoji<E extends Node>(
  root: E,
  labels: Partial<Record<IconName, string>> = LABELS,
): E {
  const pattern = new RegExp(`[${Object.keys(STATUS_EMOJI).join("")}]\\uFE0F?`, "gu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const hits: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    pattern.lastIndex = 0;
    if (node instanceof Text && pattern.test(node.data)) hits.push(node);
  }
  for (const node of hits) {
    const parts = node.data.split(new RegExp(`([${Object.keys(STATUS_EMOJI).join("")}])\\uFE0F?`, "u"));
    node.replaceWith(
      ...parts
        .map((part) => {
          const icon = STATUS_EMOJI[part];
          return icon ? svgIcon(icon, { label: labels[icon] ?? LABELS[icon] }) : part;
        })
        .filter((part) => part !== ""),
    );
  }
  return root;
}

function shape({ tag, ...attributes }: Shape): SVGElement {
  const element = document.createElementNS(SVG, tag);
  return setAll(element, attributes);
}

function setAll<E extends Element>(element: E, attributes: Record<string, string | number>): E {
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}
