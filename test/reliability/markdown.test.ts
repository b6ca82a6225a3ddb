import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { markdownToHtml } from "../../src/web/public/markdown.ts";
import { PROPERTY_RUNS, record, size, timeoutMs } from "./helpers/env.ts";

/**
 * The browser's markdown renderer (console and session page) against hostile text. Time is judged by growth,
 * not by a wall clock: rendering a pattern repeated 8 times more must cost about 8 times more in CPU time
 * (linear; the bound allows 32), far below the 64 times a quadratic renderer pays. The old regex renderer froze a tab 17-27 s on one
 * heading of 4,000 spaces. Escaping is judged by the HTML that comes out: only the renderer's own tags.
 */

const TAGS = new Set([
  "p",
  "br",
  "strong",
  "em",
  "del",
  "code",
  "pre",
  "ul",
  "ol",
  "li",
  "blockquote",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "hr",
  "a",
  "table",
  "thead",
  "tbody",
  "tr",
  "th",
  "td",
]);
const ATTRIBUTES = new Set(["class", "href", "target", "rel", "start", "data-lang", "style"]);

/** What is wrong with the HTML, judged from the output alone; undefined when nothing is. */
function unsafe(html: string): string | undefined {
  for (const match of html.matchAll(/<(\/?)([^\s>/]*)([^>]*)>/g)) {
    const [, , tag = "", rest = ""] = match;
    if (!TAGS.has(tag)) return `tag <${tag}>`;
    for (const [, name = "", value = ""] of rest.matchAll(/\s([a-z-]+)="([^"]*)"/g)) {
      if (!ATTRIBUTES.has(name)) return `attribute ${name} on <${tag}>`;
      if (name === "href" && !/^https?:\/\//i.test(value)) return `href ${value}`;
      if (name === "style" && !/^text-align:(left|center|right)$/.test(value)) return `style ${value}`;
    }
    if (/\son[a-z]+=/i.test(rest)) return `handler on <${tag}>`;
  }
  // Any `<` that did not open one of our tags would have been matched above; a stray one means raw text.
  return undefined;
}

/**
 * The cheapest of a few renders, in ms of this process's CPU time (not wall time: the other processes on a
 * shared machine do not count), after one untimed render for the JIT's warm-up.
 */
function renderMs(source: string, tries = 5): number {
  markdownToHtml(source);
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < tries; i += 1) {
    const started = process.cpuUsage();
    markdownToHtml(source);
    const used = process.cpuUsage(started);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

const GROWTH = 8;
/**
 * How much more an 8× longer input costs: ~8 when linear, ~64 when quadratic. The base is lengthened until
 * its render takes at least 1 ms, so the timer's resolution and a stray GC do not decide the ratio.
 */
function growth(unit: string): number {
  let base = Math.ceil(4_000 / unit.length);
  while (renderMs(unit.repeat(base), 1) < 1 && unit.length * base < 100_000) base *= 2;
  return renderMs(unit.repeat(base * GROWTH)) / renderMs(unit.repeat(base));
}

const LINEAR_BOUND = GROWTH * 4;
const pieces = [
  " ",
  "\n",
  "#",
  "# ",
  "*",
  "**",
  "_",
  "`",
  "```",
  "~",
  "~~",
  "[",
  "]",
  "(",
  ")",
  "](",
  "|",
  "-",
  "- ",
  "1. ",
  ">",
  "<",
  "&",
  "\\",
  "!",
  "http://",
  "a",
  "中",
  "\t",
  "    ",
];
const unitArb = fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 6 }).map((p) => p.join(""));
const textArb = fc
  .array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 6 })), { maxLength: 200 })
  .map((p) => p.join(""));

describe("markdown renderer under hostile text", () => {
  it("renders a heading of 4,000 spaces as fast as a paragraph of the same length, and linearly longer", () => {
    // The old HEADING regex backtracked cubically on spaces between two words: 48 s for this one line.
    const attack = `# a${" ".repeat(4_000)}b`;
    const html = markdownToHtml(attack);
    expect(html).toMatch(/^<h1 class="md-h">a +b<\/h1>$/);
    const baseline = `a${"x".repeat(4_000)}b`;
    const versusParagraph = renderMs(attack) / Math.max(renderMs(baseline), 0.01);
    expect(versusParagraph).toBeLessThan(10);
    // Growth measured on longer headings, where a render costs more than the timer's resolution.
    const headingGrowth = growth(`# a${" ".repeat(1_000)}b\n`);
    const spacedGrowth =
      renderMs(`# a${" ".repeat(64_000 * GROWTH)}b`) / renderMs(`# a${" ".repeat(64_000)}b`);
    expect(spacedGrowth).toBeLessThan(LINEAR_BOUND);
    expect(headingGrowth).toBeLessThan(LINEAR_BOUND);
    record("markdown 4,000-space heading", {
      attackCpuMs: renderMs(attack),
      versusParagraph,
      spacedGrowth8x: spacedGrowth,
      headingsGrowth8x: headingGrowth,
    });
  });

  it(
    "keeps every growth linear for fuzzed repeated patterns (fast-check)",
    () => {
      let worst = { unit: "", ratio: 0 };
      fc.assert(
        fc.property(unitArb, (unit) => {
          const ratio = growth(unit);
          if (ratio > worst.ratio) worst = { unit, ratio };
          return ratio < LINEAR_BOUND;
        }),
        { numRuns: size(25, 200) },
      );
      record("markdown growth fuzz", {
        runs: size(25, 200),
        worstUnit: JSON.stringify(worst.unit),
        worstRatio: worst.ratio,
      });
    },
    timeoutMs(30_000, 600_000),
  );

  it(
    "lets no tag, attribute or scheme through but its own, whatever the text (fast-check)",
    () => {
      fc.assert(
        fc.property(
          textArb,
          fc.constantFrom(
            "<script>alert(1)</script>",
            '<img src=x onerror="alert(1)">',
            "[a](javascript:alert(1))",
            '<a href="javascript:x">y</a>',
            "![i](http://x/t.png)",
            "",
          ),
          (text, attack) => {
            const html = markdownToHtml(`${text}${attack}${text}`);
            expect(unsafe(html)).toBeUndefined();
          },
        ),
        { numRuns: PROPERTY_RUNS },
      );
    },
    timeoutMs(20_000, 120_000),
  );
});
