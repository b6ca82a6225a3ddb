import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { signAgentToken, verifyAgentToken } from "../src/agents-api/token.ts";
import { parseAgentArgs } from "../src/agents-api/token-cli.ts";
import { signToken, verifyToken } from "../src/auth/token.ts";
import { tokenCli } from "../src/cli/token.ts";
import { openDatabase } from "../src/store/db.ts";
import { type AgentsRig, ALICE, BOB, QUESTION, SECRET, startAgentsRig } from "./helpers/agents.ts";
import { tempDir } from "./helpers/core.ts";

/** Forged, expired, user and other agents' tokens; oversized and malformed bodies; floods (RELIABILITY.md). */

describe("agent tokens", () => {
  const now = 1_800_000_000_000;
  const agent = signAgentToken(SECRET, { agent: "Claude Code", mayAsk: [ALICE], expiresAt: now + 1000 });

  it("carry the agent and its allow-list", () => {
    const check = verifyAgentToken(SECRET, agent, now);
    expect(check.ok && check.principal.agent).toBe("Claude Code");
    expect(check.ok && [...check.principal.mayAsk]).toEqual([ALICE]);
  });

  it("are a different kind from user tokens, both ways", () => {
    expect(verifyAgentToken(SECRET, signToken(SECRET, ALICE, now + 1000), now)).toEqual({
      ok: false,
      reason: "a user token is not an agent token",
    });
    expect(verifyToken(SECRET, agent, now).ok).toBe(false);
    // The same payload and MAC under the user prefix: the MAC covers the prefix, so it fails.
    expect(verifyToken(SECRET, agent.replace(/^a1\./, "v1."), now).ok).toBe(false);
  });

  it("refuse a forged signature, a widened allow-list and an expired token", () => {
    expect(verifyAgentToken("another-secret-0123456789", agent, now)).toMatchObject({
      reason: "bad signature",
    });
    const [, , mac] = agent.split(".");
    const widened = Buffer.from(JSON.stringify({ agent: "Claude Code", may: [ALICE, BOB], exp: now + 1000 }));
    expect(verifyAgentToken(SECRET, `a1.${widened.toString("base64url")}.${mac}`, now)).toMatchObject({
      reason: "bad signature",
    });
    expect(verifyAgentToken(SECRET, agent, now + 1000)).toMatchObject({ reason: "token expired" });
  });

  it("come from `npm run token -- --agent`, the token on the last line", async () => {
    // Minting records the token in the bot's database (for revocation), so it needs the bot's DATA_DIR.
    const dataDir = tempDir();
    openDatabase(path.join(dataDir, "bot.sqlite")).close();
    const { lines } = await tokenCli(
      ["--agent", "Claude Code", "--may-ask", `${ALICE}, oc_team`, "--days", "7"],
      { AUTH_SECRET: SECRET, DATA_DIR: dataDir },
      now,
    );
    await expect(
      tokenCli(["--agent", "x"], { AUTH_SECRET: SECRET, DATA_DIR: "/nonexistent" }, now),
    ).rejects.toThrow(/Cannot find the bot's database/);
    const check = verifyAgentToken(SECRET, lines.at(-1) ?? "", now + 6 * 86_400_000);
    expect(check.ok && [...check.principal.mayAsk]).toEqual([ALICE, "oc_team"]);
    expect(verifyAgentToken(SECRET, lines.at(-1) ?? "", now + 8 * 86_400_000).ok).toBe(false);
    expect(parseAgentArgs(["bot", "--may-ask", "alice@example.com"])).toMatchObject({ ok: false });
    await expect(tokenCli(["--agent"], { AUTH_SECRET: SECRET }, now)).rejects.toThrow(/usage/);
  });
});

describe("/mcp and /api refuse what they must", () => {
  let r: AgentsRig;
  beforeEach(async () => {
    r = await startAgentsRig({
      perAgent: { max: 3, windowMs: 60_000 },
      perTarget: { max: 5, windowMs: 60_000 },
    });
  });
  afterEach(async () => {
    await r.stop();
  });

  const post = (path: string, token: string | undefined, body: string) =>
    fetch(`${r.httpUrl}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body,
    });

  it("answers 401 with a reason for no, user, forged and expired tokens", async () => {
    const cases: [string | undefined, RegExp][] = [
      [undefined, /agent token is required/],
      [signToken(SECRET, ALICE, Date.now() + 60_000), /a user token is not an agent token/],
      [
        signAgentToken("forger-secret-0123456789", {
          agent: "x",
          mayAsk: [ALICE],
          expiresAt: Date.now() + 60_000,
        }),
        /bad signature/,
      ],
      [r.token("Claude Code", [ALICE], -1), /token expired/],
    ];
    for (const [token, reason] of cases) {
      for (const path of ["/mcp", "/api/tasks"]) {
        const response = await post(path, token, "{}");
        expect(response.status, path).toBe(401);
        expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
        const body = (await response.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe("UNAUTHORIZED");
        expect(body.error.message).toMatch(reason);
      }
    }
  });

  it("is stateless: GET and DELETE on /mcp answer 405", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await fetch(`${r.httpUrl}/mcp`, {
        method,
        headers: { authorization: `Bearer ${r.token("Claude Code", [ALICE])}` },
      });
      expect(response.status, method).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
  });

  it("the official client cannot connect with a user token", async () => {
    const client = new Client({ name: "t", version: "1" });
    const transport = new StreamableHTTPClientTransport(new URL(`${r.httpUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${signToken(SECRET, ALICE, Date.now() + 60_000)}` } },
    });
    await expect(client.connect(transport)).rejects.toThrow();
  });

  it("refuses an agent token at the WebSocket hub (a user route)", async () => {
    const ws = new WebSocket(
      `${r.httpUrl.replace("http", "ws")}/ws?token=${r.token("Claude Code", [ALICE])}`,
    );
    const status = await new Promise<number | undefined>((resolve) => {
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode));
      ws.once("open", () => resolve(101));
      ws.once("error", () => resolve(undefined));
    });
    ws.terminate();
    expect(status).toBe(401);
  });

  it("answers an oversized body with 413 and malformed JSON with 400, and nothing is shown", async () => {
    const token = r.token("Claude Code", [ALICE]);
    const huge = JSON.stringify({ to: ALICE, title: "x".repeat(300 * 1024) });
    for (const path of ["/mcp", "/api/tasks"]) {
      const big = await post(path, token, huge);
      expect(big.status, path).toBe(413);
      expect(((await big.json()) as { error: { code: string } }).error.code).toBe("TOO_LARGE");
      const bad = await post(path, token, "{not json");
      expect(bad.status, path).toBe(400);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("INVALID_INPUT");
    }
    expect(r.emulator.messages.listMessages()).toEqual([]);
  });

  it("a flood from one agent is cut off at its limit; nothing past it reaches Feishu", async () => {
    const client = await r.mcp(r.token("Spammer", [ALICE]));
    const results = [];
    for (let i = 0; i < 6; i += 1)
      results.push(await client.callTool({ name: "start_task", arguments: { to: ALICE, title: `t${i}` } }));
    const refused = results.filter((result) => result.isError);
    expect(refused).toHaveLength(3);
    expect(JSON.stringify(refused[0]?.content)).toMatch(
      /RATE_LIMITED: too many cards and questions: try again in \d+ s/,
    );
    const overHttp = await post(
      "/api/tasks",
      r.token("Spammer", [ALICE]),
      JSON.stringify({ to: ALICE, title: "x" }),
    );
    expect(overHttp.status).toBe(429);
    expect(((await overHttp.json()) as { error: { code: string } }).error.code).toBe("RATE_LIMITED");
    await r.channel.idle();
    expect(r.cardsIn(`oc_p2p_${ALICE}`)).toHaveLength(3);
  });

  it("a person is not flooded by many agents together", async () => {
    const refusals: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const client = await r.mcp(r.token(`agent-${i}`, [ALICE]));
      const result = await client.callTool({
        name: "ask_user_questions",
        arguments: { to: ALICE, questions: [QUESTION], wait_s: 0 },
      });
      if (result.isError) refusals.push(JSON.stringify(result.content));
    }
    expect(refusals).toHaveLength(2);
    expect(r.core.registry.size).toBe(5);
  });
});
