import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Core, createCore } from "../../src/core.ts";
import type { SessionInfo } from "../../src/domain/types.ts";
import type { Agent, AgentContext } from "../../src/harness/agents/agent.ts";
import type { AskSurface, ToolImpl } from "../../src/harness/dispatcher.ts";
import { createLogger } from "../../src/logger.ts";
import { openDatabase } from "../../src/store/db.ts";

export function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "fpb-test-"));
}

/** A surface that can always (or never) reach the sender; records nothing else. */
export function fakeSurface(reachable = true): AskSurface {
  return { name: "fake", canReach: () => reachable };
}

export interface TestCore extends Core {
  dbFile: string;
  close(): Promise<void>;
}

export async function buildCore(options: {
  agent: Agent;
  tools?: ToolImpl[];
  dbFile?: string;
  askTimeoutMs?: number;
  surfaces?: AskSurface[];
}): Promise<TestCore> {
  const dbFile = options.dbFile ?? path.join(tempDir(), "bot.sqlite");
  const db = openDatabase(dbFile);
  let id = 0;
  const core = await createCore({
    db,
    logger: createLogger({ level: "silent" }),
    agent: options.agent,
    tools: options.tools ?? [],
    askTimeoutMs: options.askTimeoutMs ?? 60_000,
    authSecret: "test-secret-0123456789",
    newId: () => `id-${++id}-${Math.random().toString(36).slice(2, 8)}`,
    surfaces: options.surfaces ?? [fakeSurface()],
  });
  return {
    ...core,
    dbFile,
    async close() {
      await core.runner.stop();
      await core.hub.close();
      db.close();
    },
  };
}

export function privateSession(userId = "ou_a"): SessionInfo {
  return {
    id: `feishu-cli_bot-private-${userId}`,
    channel: "feishu",
    chatType: "private",
    workspace: `/tmp/ws/${userId}`,
    ownerId: userId,
    title: "测试会话",
  };
}

/**
 * An agent the test steers: each run waits on a gate the test opens (`release`) or fails (`fail`).
 * `seen` lists every context it was run with.
 */
export function gatedAgent() {
  const gates: { resolve: (text: string) => void; reject: (error: Error) => void; ctx: AgentContext }[] = [];
  const waiters: (() => void)[] = [];
  const agent: Agent = {
    name: "gated",
    run(ctx) {
      return new Promise((resolve, reject) => {
        gates.push({ resolve: (text) => resolve({ text }), reject, ctx });
        ctx.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
        for (const wake of waiters.splice(0)) wake();
      });
    },
  };
  return {
    agent,
    gates,
    /** Resolves once the agent has been started `count` times in total. */
    async started(count: number): Promise<AgentContext> {
      while (gates.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return gates[count - 1]!.ctx;
    },
  };
}
