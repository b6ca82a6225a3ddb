import { describe, expect, it } from "vitest";
import type { ElicitationAsk } from "../src/asks/elicitation.ts";
import { elicitThrough } from "../src/harness/agents/mcp/index.ts";
import type { ToolContext } from "../src/harness/dispatcher.ts";
import { createLogger } from "../src/logger.ts";

/** Issue 24 item 12: a URL-mode elicitation's link is https, names its real host, and keeps to MCP_CONFIG's hosts. */
describe("URL-mode elicitation links", () => {
  const through = () => {
    const shown: ElicitationAsk[] = [];
    const handler = elicitThrough(
      {
        elicit: async (ask) => {
          shown.push(ask);
          return { action: "accept" };
        },
      },
      createLogger({ level: "silent" }),
    );
    const ctx = { signal: new AbortController().signal } as unknown as ToolContext;
    const ask = (url: string, urlHosts?: string[]) =>
      handler({
        server: "auth",
        ...(urlHosts ? { urlHosts } : {}),
        params: { mode: "url", message: "Sign in", url, elicitationId: "e1" },
        ctx,
        signal: new AbortController().signal,
      });
    return { shown, ask };
  };

  it("declines http, user:password@host and hosts outside elicitationHosts; shows the punycode of a look-alike", async () => {
    const { shown, ask } = through();
    expect(await ask("http://example.com/login")).toEqual({ action: "decline" });
    expect(await ask("https://google.com@evil.example/")).toEqual({ action: "decline" });
    expect(await ask("https://evil.example/", ["auth.example.com"])).toEqual({ action: "decline" });
    expect(shown).toEqual([]);
    expect(await ask("https://g\u043E\u043Egle.com/x")).toEqual({ action: "accept" });
    expect(shown[0]).toMatchObject({
      url: "https://xn--ggle-55da.com/x",
      urlHost: { unicode: "g\u043E\u043Egle.com", ascii: "xn--ggle-55da.com" },
    });
    expect(await ask("https://a.auth.example.com/", ["*.example.com"])).toEqual({ action: "accept" });
  });
});
