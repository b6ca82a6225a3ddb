import type { Server } from "node:http";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { mountAgentSetup } from "../src/agents-api/console-setup.ts";
import { verifyAgentToken } from "../src/agents-api/token.ts";

/** Local mode's 连接外部 Agent panel: a token that works, and lines that carry it. */

const SECRET = "console-secret-0123456789-0123456789";
let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

describe("GET /console/api/agent-setup", () => {
  it("hands out an agent token for the local people and the lines that connect Claude Code and Codex", async () => {
    const app = express();
    mountAgentSetup(app, {
      authSecret: SECRET,
      publicUrl: () => "http://localhost:4321",
      mayAsk: ["ou_local_alice", "oc_local_group"],
      now: Date.now,
    });
    server = app.listen(0);
    await new Promise((resolve) => server?.once("listening", resolve));
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const response = await fetch(`http://127.0.0.1:${port}/console/api/agent-setup`);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const setup = (await response.json()) as Record<string, string>;
    const check = verifyAgentToken(SECRET, setup.token ?? "", Date.now());
    expect(check.ok && [...check.principal.mayAsk]).toEqual(["ou_local_alice", "oc_local_group"]);
    expect(setup.claudeCode).toBe(
      `claude mcp add --transport http feishu http://localhost:4321/mcp --header "Authorization: Bearer ${setup.token}"`,
    );
    expect(setup.codexToml).toContain('url = "http://localhost:4321/mcp"');
    expect(setup.codexToml).toContain('bearer_token_env_var = "FEISHU_AGENT_TOKEN"');
    expect(setup.codexEnv).toBe(`export FEISHU_AGENT_TOKEN=${setup.token}`);
  });
});
