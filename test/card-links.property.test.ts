import fc from "fast-check";
import MarkdownIt from "markdown-it";
import { describe, expect, it } from "vitest";
import { sanitizeMarkdown } from "../src/cards/markdown.ts";

/**
 * The link a card carries is the link the model wrote (issue 23). URLs are drawn in the shapes real answers
 * hold (query strings built the way URLSearchParams builds them, `+` signs, percent-escapes, hash routes,
 * balanced parentheses in a path) and put where models put them (bare between Chinese words, before
 * full-width punctuation, in bold, in brackets, as `[text](…)` and `<…>`). The sanitized markdown is read
 * back by a CommonMark reader with a linkifier (markdown-it, as the emulator's checker reads cards), not by
 * our own code: the one link it finds must be the input, byte for byte.
 *
 * Seeded: fast-check prints the seed of a failure; TEST_SEED=<seed> replays it (test/setup.ts).
 */

const reader = new MarkdownIt({ linkify: true });
reader.validateLink = () => true;
reader.normalizeLink = (url) => url;

function linksIn(markdown: string): string[] {
  const hrefs: string[] = [];
  const walk = (tokens: ReturnType<typeof reader.parse>) => {
    for (const token of tokens) {
      if (token.type === "link_open") hrefs.push(String(token.attrGet("href")));
      if (token.children) walk(token.children);
    }
  };
  walk(reader.parse(markdown, {}));
  return hrefs;
}

const word = fc.stringMatching(/^[A-Za-z0-9]{1,6}(?:[-_.~][A-Za-z0-9]{1,6}){0,2}$/);
const host = fc.constantFrom(
  "example.com",
  "open.feishu.cn",
  "docs.example.co.uk",
  "localhost:8080",
  "127.0.0.1:3000",
  "sub-domain.example.org",
);
const segment = fc.oneof(
  { weight: 4, arbitrary: word },
  { weight: 1, arbitrary: word.map((w) => `${w}_(${w})`) },
  { weight: 1, arbitrary: fc.constantFrom("%E4%B8%AD%E6%96%87", "a%20b", "v1.2.3", "C++", "a+b") },
);
// Values as URLSearchParams writes them: spaces become `+`, everything else outside its set is escaped. No
// `*` and no `..`: URLSearchParams leaves both raw, and the reader's linkifier (linkify-it) ends a link at
// `..`, which says nothing about the card.
const value = fc
  .string({ unit: fc.constantFrom(..."ab z/:?=&+%中文-_.~!'"), maxLength: 12 })
  .map((text) => new URLSearchParams({ v: text.replace(/\.{2,}/g, ".") }).toString().slice(2));
const query = fc.array(fc.tuple(word, fc.oneof(value, fc.constantFrom("a+b", "1", "%2F", "x%3Ay"))), {
  minLength: 1,
  maxLength: 4,
});
const hash = fc.oneof(
  fc.constant(""),
  word.map((w) => `#${w}`),
  fc.tuple(word, word).map(([a, b]) => `#/${a}/${b}`),
  fc.tuple(word, word).map(([a, b]) => `#/${a}?tab=${b}`),
);
const url = fc
  .tuple(
    fc.constantFrom("https", "http"),
    host,
    fc.array(segment, { maxLength: 4 }),
    fc.option(query, { nil: undefined }),
    hash,
  )
  .map(([scheme, h, path, q, fragment]) => {
    const search = q ? `?${q.map(([k, v]) => `${k}=${v}`).join("&")}` : "";
    return `${scheme}://${h}${path.length > 0 ? `/${path.join("/")}` : ""}${search}${fragment}`;
  });

type Place = (url: string) => string;
const places: Place[] = [
  (u) => `详见 ${u} 中的说明`,
  (u) => `详见${u}中的说明`,
  (u) => `（详见 ${u}）`,
  (u) => `文档：${u}。`,
  (u) => `见 ${u}，然后继续`,
  (u) => `**${u}**`,
  (u) => `链接 **${u}** 已更新`,
  (u) => `(see ${u})`,
  (u) => `see ${u}.`,
  (u) => `[文档](${u})`,
  (u) => `**[文档](${u})**`,
  (u) => `<${u}>`,
  (u) => `- 第一项 ${u}`,
];

describe("links on a card", () => {
  it("carry the URL the model wrote, wherever it stands", () => {
    fc.assert(
      fc.property(url, fc.constantFrom(...places), (link, place) => {
        const text = place(link);
        // A bare URL ending in GFM's trailing punctuation (`?a=*`, as URLSearchParams leaves `*`) ends before
        // it for every autolinker, ours and the reader's alike: only a delimited link can carry that ending.
        fc.pre(!/[?!.,:;*_~']$/.test(link) || /\]\(|^<|<$/.test(text.replace(link, "")));
        expect(linksIn(sanitizeMarkdown(text)), JSON.stringify(text)).toEqual([link]);
      }),
      { numRuns: 400 },
    );
  });
});
