import { createHmac } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { signAgentToken, verifyAgentToken } from "../src/agents-api/token.ts";
import { revokeCli, TokenCliError, tokenCli } from "../src/cli/token.ts";
import { type AgentsRig, ALICE, QUESTION, SECRET, startAgentsRig } from "./helpers/agents.ts";

/**
 * Issue 24 items 8, 11 and 15 for agent tokens: revoked by id or by name against a running bot (the CLI
 * writes into its DATA_DIR, the bot reads it on the next request), "revoked" said only when something was,
 * tasks and asks owned by the token that made them, and no token issued in the future.
 */

describe("agent tokens against a running bot", () => {
  let r: AgentsRig;
  let env: Record<string, string>;
  beforeEach(async () => {
    r = await startAgentsRig();
    env = { AUTH_SECRET: SECRET, DATA_DIR: r.dataDir };
  });
  afterEach(async () => {
    await r.stop();
  });

  const mint = async (agent: string) => {
    const { lines } = await tokenCli(["--agent", agent, "--may-ask", ALICE], env, Date.now());
    const id = /Token id: (at_\S+)/.exec(lines.join("\n"))?.[1];
    if (!id) throw new Error(`no token id in ${lines.join("\n")}`);
    return { token: lines.at(-1) ?? "", id };
  };
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${r.httpUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const startTask = (token: string) => call(token, "POST", "/api/tasks", { to: ALICE, title: "Release" });
  const mcpList = (token: string) =>
    call(token, "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });

  it("revokes one token by id and every token of a name at once, and says revoked only when something was", async () => {
    const first = await mint("CI bot");
    const second = await mint("CI bot");
    const other = await mint("Deploy bot");
    expect((await startTask(first.token)).status).toBe(201);

    expect(await revokeCli(["--revoke-token", first.id], env, Date.now())).toEqual({
      lines: [expect.stringMatching(new RegExp(`^revoked agent token ${first.id} \\("CI bot"\\)`))],
      exitCode: 0,
    });
    // The next request already fails, on both doors; the other token of the same name still works.
    expect(await startTask(first.token)).toMatchObject({
      status: 401,
      body: { error: { code: "UNAUTHORIZED", message: "agent token refused: token revoked" } },
    });
    expect((await mcpList(first.token)).status).toBe(401);
    expect((await startTask(second.token)).status).toBe(201);

    const byName = await revokeCli(["--revoke-agent", "CI bot"], env, Date.now());
    expect(byName.exitCode).toBe(0);
    expect(byName.lines[0]).toMatch(
      new RegExp(`^revoked every agent token named "CI bot" .*1 recorded \\(${second.id}\\)`),
    );
    expect((await startTask(second.token)).status).toBe(401);
    expect((await mcpList(second.token)).status).toBe(401);
    expect((await startTask(other.token)).status).toBe(201);

    // Nothing to revoke: exit 1 and no "revoked" claim.
    for (const argv of [
      ["--revoke-token", "at_neverIssued0000"],
      ["--revoke-agent", "Nobody"],
      ["--revoke-agent", "CI bot"],
    ]) {
      const result = await revokeCli(argv, env, Date.now());
      expect(result.exitCode, argv.join(" ")).toBe(1);
      expect(result.lines.join("\n"), argv.join(" ")).toMatch(/nothing changed/);
      expect(result.lines.join("\n"), argv.join(" ")).not.toMatch(/^revoked/m);
    }
    // An agent's name given to the user flag was "revoked every token of CI bot" before, while its tokens worked.
    await expect(revokeCli(["--revoke", "CI bot"], env, Date.now())).rejects.toThrow(TokenCliError);
    await expect(revokeCli(["--revoke", "CI bot"], env, Date.now())).rejects.toThrow(/--revoke-agent <name>/);
  });

  it("refuses, with --force, a token of that name this DATA_DIR never recorded (the console's)", async () => {
    const unrecorded = r.token("Local Agent", [ALICE]);
    expect((await startTask(unrecorded)).status).toBe(201);
    expect((await revokeCli(["--revoke-agent", "Local Agent"], env, Date.now())).exitCode).toBe(1);
    expect((await startTask(unrecorded)).status).toBe(201);
    const forced = await revokeCli(["--revoke-agent", "Local Agent", "--force"], env, Date.now());
    expect(forced).toMatchObject({
      exitCode: 0,
      lines: [expect.stringMatching(/^revoked every agent token named "Local Agent"/)],
    });
    expect((await startTask(unrecorded)).status).toBe(401);
    // A token made after the revocation works again.
    expect((await startTask(r.token("Local Agent", [ALICE]))).status).toBe(201);
  });

  it("keeps a task and its questions to the token that made them, even under the same agent name", async () => {
    const owner = r.token("CI bot", [ALICE]);
    const sameName = r.token("CI bot", [ALICE]);
    const task = await startTask(owner);
    const taskId = String(task.body.task_id);
    const asked = await call(owner, "POST", "/api/asks", { task_id: taskId, questions: [QUESTION] });
    const askId = String(asked.body.ask_id);

    // A leaked task or question id is as unknown to the other token as one that never was.
    expect((await call(sameName, "GET", `/api/asks/${askId}`)).status).toBe(404);
    expect((await call(sameName, "DELETE", `/api/asks/${askId}`)).status).toBe(404);
    expect((await call(sameName, "POST", `/api/tasks/${taskId}/steps`, { step: "Injected" })).status).toBe(
      404,
    );
    expect(
      (await call(sameName, "POST", "/api/asks", { task_id: taskId, questions: [QUESTION] })).status,
    ).toBe(404);
    expect((await call(sameName, "POST", `/api/tasks/${taskId}/finish`, { status: "failed" })).status).toBe(
      404,
    );

    expect(r.core.registry.get(askId)).toBeDefined();
    expect((await call(owner, "GET", `/api/asks/${askId}`)).body.status).toBe("pending");
    expect((await call(owner, "POST", `/api/tasks/${taskId}/steps`, { step: "Build" })).status).toBe(200);
    // The owner's rows carry its token id, so this holds after a restart too.
    const row = r.core.store.db.prepare("SELECT token_id FROM agent_tasks WHERE id = ?").get(taskId) as {
      token_id: string | null;
    };
    const check = verifyAgentToken(SECRET, owner, Date.now());
    expect(check.ok && row.token_id).toBe(check.ok ? check.principal.tokenId : "");
  });
});

describe("agent token claims", () => {
  const now = 1_800_000_000_000;

  it("refuse an iat beyond two minutes of clock skew, which would outlive every revocation", () => {
    const future = signAgentToken(SECRET, {
      agent: "CI bot",
      mayAsk: [ALICE],
      expiresAt: now + 10 * 86_400_000,
      issuedAt: now + 86_400_000,
    });
    expect(verifyAgentToken(SECRET, future, now)).toEqual({
      ok: false,
      reason: "token issued in the future",
    });
    const skewed = signAgentToken(SECRET, {
      agent: "CI bot",
      mayAsk: [ALICE],
      expiresAt: now + 60_000,
      issuedAt: now + 60_000,
    });
    expect(verifyAgentToken(SECRET, skewed, now).ok).toBe(true);
  });

  it("give tokens from before token ids a stable id of their own", () => {
    const legacyPayload = Buffer.from(
      JSON.stringify({ agent: "CI bot", may: [ALICE], exp: now + 1000 }),
    ).toString("base64url");
    const legacy = tokenOf(legacyPayload);
    const a = verifyAgentToken(SECRET, legacy, now);
    const b = verifyAgentToken(SECRET, legacy, now);
    expect(a.ok && b.ok && a.principal.tokenId === b.principal.tokenId && a.principal.issuedAt).toBe(0);
  });
});

function tokenOf(payload: string): string {
  // Signed as the old code did: the same MAC over the kind and the payload.
  return `a1.${payload}.${createHmac("sha256", SECRET).update(`a1.${payload}`).digest("base64url")}`;
}
