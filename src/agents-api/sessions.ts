import type { ExternalSession, ExternalSessionSource } from "../domain/external-sessions.ts";
import type { RunView } from "../domain/types.ts";
import { strings } from "../strings.ts";
import type { AgentTasks } from "./service.ts";

/**
 * Outside agents' tasks as sessions for the hub and the session page (domain/external-sessions.ts).
 * Who may look: in a private chat its person; in a group, whoever a task of the session waits on or waited
 * on (its answerer) — the bot does not know a group's members for an agent's card, so no one else.
 */
export function agentSessions(tasks: Pick<AgentTasks, "tasksOf">): ExternalSessionSource {
  const latest = (sessionId: string) => tasks.tasksOf(sessionId).at(-1);
  return {
    session(sessionId): ExternalSession | undefined {
      if (!sessionId.startsWith("agent:")) return undefined;
      const task = latest(sessionId);
      if (!task) return undefined;
      return { title: strings.agents.sessionTitle(task.agent), chatType: task.chatType, run: task.run };
    },
    run(sessionId, runId): RunView | undefined {
      return tasks.tasksOf(sessionId).find((task) => task.run.id === runId)?.run;
    },
    runs(sessionId, limit): RunView[] {
      return tasks
        .tasksOf(sessionId)
        .map((task) => task.run)
        .reverse()
        .slice(0, limit);
    },
    canView(userId, sessionId): boolean {
      if (!userId || !sessionId.startsWith("agent:")) return false;
      return tasks
        .tasksOf(sessionId)
        .some((task) => (task.chatType === "private" ? task.to === userId : task.run.senderId === userId));
    },
  };
}
