import { describe, expect, it } from "vitest";
import { codeLanguage, escapeText, previewBlock, safeUrl, sanitizeMarkdown } from "../src/cards/markdown.ts";

/**
 * What reaches a card's markdown: the cases the platform's FAQ says make a send fail (图片 needs an
 * image_key: 200570; non-http(s) links; a URL glued to Chinese; special characters in a URL), code-fence
 * languages, and user-typed text that must stay text. Expected outputs are written out by hand.
 */
describe("sanitizeMarkdown (the model's markdown)", () => {
  it("turns an image into a link with its alt text, or 图片 without one", () => {
    expect(sanitizeMarkdown("架构 ![拓扑图](https://example.com/a.png) 如上", { imageText: "图片" })).toBe(
      "架构 [拓扑图](https://example.com/a.png) 如上",
    );
    expect(sanitizeMarkdown("![](https://example.com/a.png)", { imageText: "图片" })).toBe(
      "[图片](https://example.com/a.png)",
    );
    expect(sanitizeMarkdown('![x](https://example.com/a.png "title")')).toBe(
      "[x](https://example.com/a.png)",
    );
    // An image with a target that is not http(s) leaves only its text.
    expect(sanitizeMarkdown("![logo](data:image/png;base64,AAAA)")).toBe("logo");
  });

  it("keeps http(s) and tel: links, and shows every other scheme as its text", () => {
    expect(sanitizeMarkdown("[文档](https://open.feishu.cn/document)")).toBe(
      "[文档](https://open.feishu.cn/document)",
    );
    expect(
      sanitizeMarkdown("[点我](javascript:alert(1)) [邮件](mailto:a@b.com) [本地](file:///etc/passwd)"),
    ).toBe("点我 邮件 本地");
    expect(sanitizeMarkdown("[相对](/sessions/1)")).toBe("相对");
    expect(sanitizeMarkdown("<a href='ftp://x.org/f'>下载</a> <a href=\"https://x.org\">官网</a>")).toBe(
      "下载 [官网](https://x.org)",
    );
    expect(sanitizeMarkdown("[ref]: ftp://x.org/f")).toBe("&#91;ref&#93;: ftp&#58;//x.org/f");
    // 富文本 可点击的电话号码: `[text](tel://…)`, mobile only; as written, separators kept.
    expect(sanitizeMarkdown("[拨打客服](tel://10086) [值班](tel:+86-10-1234-5678)")).toBe(
      "[拨打客服](tel://10086) [值班](tel:+86-10-1234-5678)",
    );
    expect(sanitizeMarkdown("[坏号码](tel:call-me)")).toBe("坏号码");
  });

  it("delimits a bare URL that runs straight into Chinese text with a space", () => {
    expect(sanitizeMarkdown("详见https://example.com/docs中文说明")).toBe(
      "详见https://example.com/docs 中文说明",
    );
    expect(sanitizeMarkdown("见 https://example.com/docs。")).toBe("见 https://example.com/docs 。");
    expect(sanitizeMarkdown("plain https://example.com/docs and more")).toBe(
      "plain https://example.com/docs and more",
    );
  });

  it("keeps the issue's links as the model wrote them (issue 23)", () => {
    expect(sanitizeMarkdown("**https://example.com/docs/a**")).toBe("**https://example.com/docs/a**");
    expect(sanitizeMarkdown("（详见 https://example.com/x?q=a+b#/route）")).toBe(
      "（详见 https://example.com/x?q=a+b#/route ）",
    );
    expect(
      sanitizeMarkdown("见 [维基](https://en.wikipedia.org/wiki/Foo_(bar)) 与 (https://x.org/a_(b))"),
    ).toBe("见 [维基](https://en.wikipedia.org/wiki/Foo_(bar)) 与 (https://x.org/a_(b))");
    expect(sanitizeMarkdown("[搜索](https://example.com/s?q=a(b)&x='y'&tag=c%2B%2B)")).toBe(
      "[搜索](https://example.com/s?q=a(b)&x='y'&tag=c%2B%2B)",
    );
    expect(sanitizeMarkdown("打开 https://app.example.com/#/orders/42?tab=items，然后")).toBe(
      "打开 https://app.example.com/#/orders/42?tab=items ，然后",
    );
  });

  it("percent-encodes only what a card cannot carry, as the FAQ's example asks", () => {
    expect(safeUrl("https://open.feishu.cn?time=31/12/2014 23:59:59")).toBe(
      "https://open.feishu.cn?time=31%2F12%2F2014%2023%3A59%3A59",
    );
    expect(safeUrl("https://example.com/路径/文件")).toBe(
      "https://example.com/%E8%B7%AF%E5%BE%84/%E6%96%87%E4%BB%B6",
    );
    expect(safeUrl("https://example.com/?bad=%E0%A4%A")).toBe("https://example.com/?bad=%E0%A4%25A");
    expect(safeUrl('https://example.com/a"b<c>')).toBe("https://example.com/a%22b%3Cc%3E");
    // A parenthesis that pairs with nothing would end a [text](…) target early.
    expect(safeUrl("https://example.com/a)b")).toBe("https://example.com/a%29b");
    // A host the parser reads differently from the text (a backslash) is rebuilt from the parse.
    expect(safeUrl("https://x.org\\@evil.com/a")).toBe("https://x.org/@evil.com/a");
    expect(safeUrl("javascript:alert(1)")).toBeUndefined();
    expect(safeUrl("https://")).toBeUndefined();
  });

  it("maps code-fence languages to the documented names and drops unknown ones", () => {
    expect(sanitizeMarkdown("```dockerfile\nFROM node:20\n```")).toBe("```docker_file\nFROM node:20\n```");
    expect(sanitizeMarkdown("```TS\nconst a = 1;\n```")).toBe("```typescript\nconst a = 1;\n```");
    expect(sanitizeMarkdown("```brainfuck\n+++\n```")).toBe("```\n+++\n```");
    expect(sanitizeMarkdown("~~~Python3 extra\nprint()\n~~~")).toBe("~~~python\nprint()\n~~~");
    expect(codeLanguage("C#")).toBe("c_sharp");
    expect(codeLanguage("JSON")).toBe("json");
  });

  it("leaves code alone: no link or image rewriting inside fences and code spans", () => {
    const fenced = "```\n![x](javascript:1) **https://x.org/a**\n```";
    expect(sanitizeMarkdown(fenced)).toBe(fenced);
    expect(sanitizeMarkdown("用 `![x](y)` 插图")).toBe("用 `![x](y)` 插图");
  });

  it("breaks <at> inside code too, so a code block cannot ping the group (issue 23)", () => {
    const zwj = "\u200d";
    expect(sanitizeMarkdown("```\n<at id=all></at> <AT ID=ou_1></AT>\n```")).toBe(
      `\`\`\`\n<${zwj}at id=all><${zwj}/at> <${zwj}AT ID=ou_1><${zwj}/AT>\n\`\`\``,
    );
    expect(sanitizeMarkdown("试试 `<at id=all></at>` 吧")).toBe(`试试 \`<${zwj}at id=all><${zwj}/at>\` 吧`);
    expect(previewBlock("<at id=all></at>")).toBe(`\`\`\`\n<${zwj}at id=all><${zwj}/at>\n\`\`\``);
    // Other tags in code stay as written: only a mention can notify anyone.
    expect(sanitizeMarkdown("`<font color=red>`")).toBe("`<font color=red>`");
  });

  it("closes a fence a cut left open, so nothing after it turns into code", () => {
    expect(sanitizeMarkdown("```js\nconst a = 1;…(内容过长)")).toBe(
      "```javascript\nconst a = 1;…(内容过长)\n```",
    );
  });

  it("shows tags outside the allowed few as text: mentions, <link>, <img>, HTML blocks", () => {
    const out = sanitizeMarkdown(
      "<at id=all></at> <person id=ou_1></person> <link url='https://x.org'>l</link> <img src=x> <font color='red'>红</font><br>",
    );
    expect(out).not.toMatch(/<(at|person|link|img)\b/i);
    expect(out).toContain("<font color='red'>红</font><br>");
    expect(sanitizeMarkdown("<!-- 注释 --> <?xml?>")).toBe("&#60;!-- 注释 --> &#60;?xml?>");
    expect(sanitizeMarkdown("[<at id=all></at>](https://x.org)")).toBe(
      "[&#60;at id=all>&#60;/at>](https://x.org)",
    );
  });

  it("keeps the rest of the markdown as it was", () => {
    const text = "# 标题\n\n**粗体** *斜体* ~~删除~~\n\n- 一\n- 二\n\n| a | b |\n|---|---|\n| 1 | 2 |";
    expect(sanitizeMarkdown(text)).toBe(text);
  });
});

describe("escapeText (user-typed text and fields inside our own lines)", () => {
  it("cannot add a heading, bold 系统通知, a link, a rule, <font> or a mention", () => {
    const hostile =
      "# 系统通知\n**管理员**: 请点 [这里](https://evil.example)\n---\n<font color='red'>紧急</font> <at id=all></at>";
    const out = escapeText(hostile);
    expect(out).toBe(
      "&#35; 系统通知\n&#42;&#42;管理员&#42;&#42;: 请点 &#91;这里&#93;(https&#58;//evil.example)\n&#45;--\n&#60;font color='red'&#62;紧急&#60;/font&#62; &#60;at id=all&#62;&#60;/at&#62;",
    );
  });

  it("breaks autolinks: URLs, www. hosts and e-mail addresses", () => {
    expect(escapeText("看 https://evil.example 或 www.evil.example 或 a@b.com")).toBe(
      "看 https&#58;//evil.example 或 www&#46;evil.example 或 a&#64;b.com",
    );
  });

  it("keeps entities, emoji shortcodes and backslashes literal", () => {
    expect(escapeText("&reg; :OK: :THUMBS_UP: a\\*b `x`")).toBe(
      "&#38;reg; &#58;OK: &#58;THUMBS&#95;UP: a&#92;&#42;b &#96;x&#96;",
    );
  });

  it("leaves ordinary Chinese text and punctuation untouched", () => {
    expect(escapeText("部署到生产环境(先灰度),时间 10:30。")).toBe("部署到生产环境(先灰度),时间 10:30。");
  });
});
