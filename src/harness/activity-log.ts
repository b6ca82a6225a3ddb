import type { AskOutcome, PendingAsk } from "../asks/pending.ts";
import type { AskRegistry } from "../asks/registry.ts";
import type { RunFeed } from "../domain/run-feed.ts";
import { isTerminal, type RunView } from "../domain/types.ts";
import type { Logger } from "../logger.ts";

/**
 * What an operator reads at LOG_LEVEL=info (issue 25): one line per task started, question asked, question
 * ended (answered: by whom, on which surface, after how long) and task finished (status, duration). It hears
 * the joined run feed and the ask registry, so every kind of run (a chat's, an outside agent's) and every
 * surface (card, session page, MCP) is logged the same way, by one listener rather than by each channel.
 * Ids only: no question text or answer reaches the log.
 */
export function logActivity(deps: {
  runs: Pick<RunFeed, "on" | "session">;
  registry: Pick<AskRegistry, "on">;
  logger: Logger;
  now: () => number;
}): () => void {
  const log = deps.logger.child({ module: "activity" });
  // Runs seen starting in this process: a finish is logged once, however many updates follow it.
  const open = new Set<string>();
  const finished = (run: RunView) => {
    if (!open.delete(run.id)) return;
    const durationMs = (run.endedAt ?? deps.now()) - run.startedAt;
    const line = { runId: run.id, sessionId: run.sessionId, status: run.status, durationMs };
    if (run.status === "failed") log.info({ ...line, error: run.error }, "task finished");
    else log.info(line, "task finished");
  };
  const offs = [
    deps.runs.on("run_started", ({ run, resumed }) => {
      open.add(run.id);
      void deps.runs.session(run.sessionId).then(
        (session) =>
          log.info(
            {
              runId: run.id,
              sessionId: run.sessionId,
              senderId: run.senderId,
              channel: session?.channel,
              resumed,
            },
            resumed ? "task resumed" : "task started",
          ),
        () =>
          log.info(
            { runId: run.id, sessionId: run.sessionId, senderId: run.senderId, resumed },
            resumed ? "task resumed" : "task started",
          ),
      );
      if (isTerminal(run)) finished(run);
    }),
    deps.runs.on("run_updated", (run) => {
      if (isTerminal(run)) finished(run);
    }),
    deps.registry.on("registered", (ask) => {
      log.info(
        {
          requestId: ask.requestId,
          runId: ask.runId,
          sessionId: ask.sessionId,
          answererId: ask.answererId,
          questions: ask.elicitation ? 1 : ask.questions.length,
          surfaces: ask.surfaces,
          timeoutMs: ask.expiresAt - ask.createdAt,
        },
        "question asked",
      );
    }),
    deps.registry.on("settled", ({ ask, outcome }) => questionEnded(log, ask, outcome, deps.now())),
  ];
  return () => {
    for (const off of offs) off();
  };
}

function questionEnded(log: Logger, ask: PendingAsk, outcome: AskOutcome, now: number): void {
  const line = { requestId: ask.requestId, runId: ask.runId, waitedMs: now - ask.createdAt };
  switch (outcome.kind) {
    case "answered": {
      const action = outcome.response?.action;
      log.info(
        { ...line, by: outcome.userId, surface: outcome.surface, ...(action ? { action } : {}) },
        "question answered",
      );
      return;
    }
    case "timeout":
      log.info(line, "question timed out");
      return;
    case "cancelled":
      log.info({ ...line, reason: outcome.reason }, "question cancelled");
      return;
  }
}
