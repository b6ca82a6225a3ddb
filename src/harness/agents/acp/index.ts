import path from "node:path";
import type { RequestPermissionResponse, StopReason } from "@agentclientprotocol/sdk";
import { MemoryStandingPermissions, type StandingPermissions } from "../../../domain/standing-permissions.ts";
import { describeError } from "../../../errors.ts";
import type { Logger } from "../../../logger.ts";
import { strings } from "../../../strings/index.ts";
import { abortReason } from "../../../util/sleep.ts";
import type { Agent, AgentContext, AgentResult } from "../agent.ts";
import { type Isolation, NO_ISOLATION } from "../isolation.ts";
import { CoalescingSink } from "./coalesce.ts";
import type { AcpConfig } from "./config.ts";
import { answerPermission } from "./permission-flow.ts";
import { AcpProcess } from "./process.ts";
import { fileSessionIds, type SessionIdStore } from "./session-ids.ts";
import { createTerminalHost } from "./terminals.ts";
import { ToolCallMemory } from "./tool-calls.ts";
import { TurnReporter } from "./updates.ts";
import { promptUsage } from "./usage.ts";
import { Watchdog } from "./watchdog.ts";
import { openWorkspace } from "./workspace-fs.ts";

/**
 * `AGENT=acp`: an Agent Client Protocol agent (Claude Code, Codex, Gemini CLI adapters…) behind the card.
 * One agent process per chat session, started on its first message and kept for the next ones, so a hang or
 * crash in one chat never stops another's; one ACP session per chat session, its id kept under DATA_DIR and
 * resumed with `session/load` where the agent offers it. A prompt turn is one run: its plan and tool calls
 * become steps, its message the answer, its permission requests forms; 取消任务 sends `session/cancel`.
 */

export interface AcpAgentOptions extends AcpConfig {
  dataDir: string;
  logger: Logger;
  sessionIds?: SessionIdStore;
  /** How long a cancelled prompt may take to wind down before the run ends anyway; default 5 s. */
  cancelGraceMs?: number;
  /** Where the agent and its terminals run (isolation.ts); default: as asked, no sandbox. */
  isolation?: Isolation;
  /** The sessions' "always allow" choices (store/permissions.ts in the service); default: this process's memory. */
  standing?: StandingPermissions;
}

export interface AcpAgent extends Agent {
  close(): Promise<void>;
}

type Ending =
  | { kind: "stop"; stopReason: StopReason }
  | { kind: "error"; error: unknown }
  | { kind: "exit"; reason: string }
  | { kind: "hung" }
  | { kind: "abort" };

export function createAcpAgent(options: AcpAgentOptions): AcpAgent {
  const logger = options.logger.child({ module: "acp-agent" });
  const sessionIds =
    options.sessionIds ?? fileSessionIds(path.join(options.dataDir, "acp-sessions.json"), logger);
  const standing = options.standing ?? new MemoryStandingPermissions();
  const processes = new Map<string, AcpProcess>();
  /** Stops a chat's idle agent process after ACP_KEEP_ALIVE_MS, so a bot in many chats does not keep them all. */
  const idleTimers = new Map<string, ReturnType<typeof setTimeout>>();
  const keepAliveMs = options.keepAliveMs ?? 1_800_000;
  /** What each chat's ACP session said of its tool calls, for permission requests that leave it out (tool-calls.ts). */
  const callMemories = new Map<string, { acpSessionId: string; memory: ToolCallMemory }>();
  const callsOf = (chatSessionId: string, acpSessionId: string): ToolCallMemory => {
    const kept = callMemories.get(chatSessionId);
    if (kept?.acpSessionId === acpSessionId) return kept.memory;
    const memory = new ToolCallMemory();
    callMemories.set(chatSessionId, { acpSessionId, memory });
    return memory;
  };
  /** Forgets the process at once (the next message starts a new one), then stops it. */
  const retire = (chatSessionId: string, proc: AcpProcess): Promise<void> => {
    if (processes.get(chatSessionId) === proc) processes.delete(chatSessionId);
    callMemories.delete(chatSessionId);
    return proc.kill();
  };
  const sleepLater = (chatSessionId: string, proc: AcpProcess) => {
    clearTimeout(idleTimers.get(chatSessionId));
    const timer = setTimeout(() => {
      idleTimers.delete(chatSessionId);
      retire(chatSessionId, proc);
    }, keepAliveMs);
    timer.unref?.();
    idleTimers.set(chatSessionId, timer);
  };

  const isolation = options.isolation ?? NO_ISOLATION;
  const start = (chatSessionId: string, cwd: string): AcpProcess => {
    // In the sandbox the chat's workspace is the one place under DATA_DIR the agent sees (and may write).
    const launch = isolation.wrap({ command: options.command, args: options.args, cwd, writable: [cwd] });
    const proc = new AcpProcess({
      command: launch.command,
      args: launch.args,
      env: options.env,
      cwd,
      terminal: options.terminal,
      logger: logger.child({ sessionId: chatSessionId }),
    });
    processes.set(chatSessionId, proc);
    void proc.exited.then((reason) => {
      if (proc.stoppedByUs) logger.info({ sessionId: chatSessionId }, "acp agent process stopped");
      else logger.warn({ sessionId: chatSessionId, reason }, "acp agent process ended");
      if (processes.get(chatSessionId) === proc) processes.delete(chatSessionId);
    });
    return proc;
  };

  async function run(ctx: AgentContext): Promise<AgentResult> {
    clearTimeout(idleTimers.get(ctx.session.id));
    idleTimers.delete(ctx.session.id);
    const workspace = await openWorkspace(
      ctx.session.workspace,
      isolation.user ? { owner: isolation.user } : {},
    );
    const fresh = !processes.get(ctx.session.id)?.alive;
    const proc = fresh ? start(ctx.session.id, workspace.root) : processes.get(ctx.session.id);
    if (!proc) throw new Error("ACP agent process missing");
    const watchdog = new Watchdog(options.idleTimeoutMs);
    const aborted = new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      ctx.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    /** Every wait on the agent ends when it answers, exits, hangs, or the run is cancelled. */
    const guard = async <T>(work: Promise<T>): Promise<T> => {
      const ending = await Promise.race([
        work.then((value) => ({ kind: "value" as const, value })),
        proc.exited.then((reason): Ending => ({ kind: "exit", reason })),
        watchdog.fired.then((): Ending => ({ kind: "hung" })),
        aborted.then((): Ending => ({ kind: "abort" })),
      ]).catch((error: unknown): Ending => ({ kind: "error", error }));
      if (ending.kind === "value") return ending.value;
      throw await failure(ending, proc, ctx);
    };

    // The agent's updates reach the run coalesced (coalesce.ts): one write per burst, not per update.
    const updates = new CoalescingSink(ctx);
    const reporter = new TurnReporter(updates, [workspace.root, ctx.session.workspace]);
    const terminals = options.terminal
      ? createTerminalHost(workspace.root, options.env, isolation)
      : undefined;
    let acpSessionId: string | undefined;
    try {
      if (fresh) {
        try {
          await guard(proc.initialize(options.terminal));
        } catch (error) {
          // A process that could not even say hello is of no use to the next message either.
          await retire(ctx.session.id, proc);
          throw error;
        }
      }
      acpSessionId = await guard(openSession(proc, ctx.session.id, workspace.root));
      const calls = callsOf(ctx.session.id, acpSessionId);
      const flow = { ctx, reporter, updates, standing, calls, logger, now: Date.now };
      proc.attach(acpSessionId, {
        onUpdate: (update) => {
          calls.apply(update);
          reporter.apply(update);
        },
        activity: () => watchdog.kick(),
        fs: workspace,
        ...(terminals ? { terminals } : {}),
        requestPermission: async (request, requestSignal): Promise<RequestPermissionResponse> => {
          watchdog.pause();
          try {
            return await answerPermission(flow, request, requestSignal);
          } catch (error) {
            // The run was cancelled while the form was open: ACP wants the `cancelled` outcome then.
            logger.debug({ err: error }, "permission ask ended without an answer");
            return { outcome: { outcome: "cancelled" } };
          } finally {
            watchdog.resume();
          }
        },
      });
      watchdog.kick();
      // Cancelled while the session was being opened: nothing was asked of the agent yet.
      if (ctx.signal.aborted) throw abortReason(ctx.signal);
      const prompt = proc.agent.request("session/prompt", {
        sessionId: acpSessionId,
        prompt: [{ type: "text", text: ctx.input }],
      });
      const sessionId = acpSessionId;
      const cancel = () => {
        proc.agent.notify("session/cancel", { sessionId }).catch((error: unknown) => {
          logger.debug({ err: error }, "session/cancel not delivered");
        });
      };
      ctx.signal.addEventListener("abort", cancel, { once: true });
      let response: { stopReason: StopReason; usage?: unknown };
      try {
        response = await guard(prompt);
      } catch (error) {
        if (ctx.signal.aborted) await windDown(prompt, proc, options.cancelGraceMs ?? 5000);
        throw error;
      } finally {
        ctx.signal.removeEventListener("abort", cancel);
      }
      updates.flush();
      // The turn's tokens, where the agent reports them (issue 30): ACP names no model, so none is shown.
      const usage = promptUsage(response);
      if (usage) ctx.reportUsage?.(usage);
      // The agent stopped itself after the person said no (codex-acp answers a refusal with `cancelled`).
      if (response.stopReason === "cancelled" && reporter.anyRefused && !ctx.signal.aborted)
        return { text: reporter.text, ending: "rejected" };
      return finish(response.stopReason, reporter.text);
    } finally {
      watchdog.stop();
      terminals?.releaseAll();
      if (acpSessionId) proc.detach(acpSessionId);
      // After detach: nothing can arrive once the pending changes are handed on.
      updates.close();
      if (proc.alive) sleepLater(ctx.session.id, proc);
    }
  }

  async function openSession(proc: AcpProcess, chatSessionId: string, cwd: string): Promise<string> {
    const stored = sessionIds.get(chatSessionId);
    if (stored && proc.known.has(stored)) return stored;
    if (stored && proc.capabilities?.agentCapabilities?.loadSession) {
      try {
        await proc.agent.request("session/load", { sessionId: stored, cwd, mcpServers: [] });
        proc.known.add(stored);
        return stored;
      } catch (error) {
        // The agent forgot it (another machine, a cleared cache): the chat goes on in a new ACP session.
        logger.warn(
          { sessionId: chatSessionId, err: error },
          "acp session/load failed; opening a new session",
        );
      }
    }
    const created = await proc.agent.request("session/new", { cwd, mcpServers: [] });
    sessionIds.set(chatSessionId, created.sessionId);
    proc.known.add(created.sessionId);
    return created.sessionId;
  }

  /** Why the run ends early, as the error the card shows; a hung or broken process is stopped for good. */
  async function failure(ending: Ending, proc: AcpProcess, ctx: AgentContext): Promise<Error> {
    switch (ending.kind) {
      case "abort":
        return abortReason(ctx.signal);
      case "hung":
        logger.warn(
          { sessionId: ctx.session.id, idleMs: options.idleTimeoutMs },
          "acp agent hung; stopping it",
        );
        await retire(ctx.session.id, proc);
        return new Error(strings.acp.hung(Math.round(options.idleTimeoutMs / 1000)));
      case "exit":
        return new Error(ending.reason);
      case "error":
        // A closed connection means the process is going: report its exit, not the SDK's "connection closed".
        if (!proc.alive || proc.closed) return new Error(await proc.kill().then(() => proc.exited));
        return new Error(strings.acp.failed(describeError(ending.error)));
      case "stop":
        return new Error(strings.acp.stoppedAt(ending.stopReason));
    }
  }

  return {
    name: "acp",
    // The agent's process and its workspace are on this host's disk: neither moves to another instance.
    pinned: async () => true,
    run,
    async close() {
      for (const timer of idleTimers.values()) clearTimeout(timer);
      idleTimers.clear();
      await Promise.all([...processes.values()].map((proc) => proc.kill()));
      processes.clear();
      callMemories.clear();
    },
  };
}

/**
 * After `session/cancel` the agent ends the turn with stopReason `cancelled`; the next message must not reach
 * it while it still winds the old one down. One that ignores the cancel is stopped (restarted next time).
 */
async function windDown(prompt: Promise<unknown>, proc: AcpProcess, graceMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), graceMs);
  });
  const settled = prompt.then(
    () => "done" as const,
    () => "done" as const,
  );
  const outcome = await Promise.race([settled, proc.exited.then(() => "done" as const), late]);
  clearTimeout(timer);
  if (outcome === "late") await proc.kill();
}

function finish(stopReason: StopReason, text: string): AgentResult {
  switch (stopReason) {
    case "end_turn":
      return { text: text || strings.acp.emptyAnswer };
    case "max_tokens":
    case "max_turn_requests":
      return { text: `${text}\n\n${strings.acp.stoppedAt(stopReason)}`.trim() };
    case "refusal":
      throw new Error(strings.acp.refused);
    case "cancelled":
      throw new Error(strings.acp.stoppedAt(stopReason));
  }
}
