import { describe, expect, it } from "vitest";
import { resolveMentions } from "../src/local/console/public/card-values.ts";
import { openAs } from "../src/local/console/public/sign-in.ts";

/** The console's pure helpers for who you are: card links opened as the current user, and <at> names. */

describe("openAs (会话详情 from the console)", () => {
  const run = "http://localhost:3000/sessions/feishu-cli-private-ou_b/runs/r1";

  it("sends a session link of this server through /auth/local as the current user, back to the same page", () => {
    const opened = new URL(openAs(run, "ou_local_bob", "http://localhost:3000"));
    expect(opened.origin).toBe("http://localhost:3000");
    expect(opened.pathname).toBe("/auth/local");
    expect(opened.searchParams.get("user")).toBe("ou_local_bob");
    expect(opened.searchParams.get("next")).toBe("/sessions/feishu-cli-private-ou_b/runs/r1");
  });

  it("signs in on the link's own host when the console was opened under another loopback name", () => {
    const opened = new URL(openAs(run, "ou_local_bob", "http://127.0.0.1:3000"));
    expect(opened.host).toBe("localhost:3000");
    expect(opened.pathname).toBe("/auth/local");
  });

  it("leaves other links alone: other servers, other ports, other paths, no user", () => {
    expect(openAs("https://example.com/sessions/x", "ou_a", "http://localhost:3000")).toBe(
      "https://example.com/sessions/x",
    );
    expect(openAs("http://localhost:4000/sessions/x", "ou_a", "http://localhost:3000")).toBe(
      "http://localhost:4000/sessions/x",
    );
    expect(openAs("http://localhost:3000/console", "ou_a", "http://localhost:3000")).toBe(
      "http://localhost:3000/console",
    );
    expect(openAs(run, "", "http://localhost:3000")).toBe(run);
    expect(openAs("not a url", "ou_a", "http://localhost:3000")).toBe("not a url");
  });
});

describe("resolveMentions (card markdown <at> as Feishu shows it)", () => {
  const names = (id: string) => ({ ou_local_alice: "Alice" })[id];

  it("shows @name for a known open_id, @所有人 for all, the id for someone unknown", () => {
    expect(resolveMentions("**等待** <at id=ou_local_alice></at> **回答**", names)).toBe(
      "**等待** @Alice **回答**",
    );
    expect(resolveMentions('<at id="all"></at> 看一下', names)).toBe("@所有人 看一下");
    expect(resolveMentions("<at id=ou_who></at>", names)).toBe("@ou_who");
  });

  it("leaves escaped tags (how the bot passes on text users and models wrote) as they are", () => {
    const escaped = "&lt;at id=ou_local_alice&gt;&lt;/at&gt;";
    expect(resolveMentions(escaped, names)).toBe(escaped);
  });
});
