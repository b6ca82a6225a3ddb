import type { RunView } from "./types.ts";

/**
 * Sessions whose tasks the runner does not run: an outside agent's (`agent:<name>:<to>`, agents-api). The hub
 * and the session page ask these first, so such a task shows like the bot's own run: its title, steps, status
 * and its pending question for the answerer. They are read-only there: nothing queues, nothing cancels.
 */
export interface ExternalSession {
  /** What the page's header says (names the agent). */
  title: string;
  chatType: "private" | "group";
  /** The session's latest task. */
  run: RunView;
}

export interface ExternalSessionSource {
  /** The session, or undefined when this source does not hold it. */
  session(sessionId: string): ExternalSession | undefined;
  /** One of the session's tasks by id (a card's link names its own task). */
  run(sessionId: string, runId: string): RunView | undefined;
  /** The session's tasks, newest first. */
  runs(sessionId: string, limit: number): RunView[];
  canView(userId: string, sessionId: string): boolean;
}

export class ExternalSessions {
  readonly #sources: ExternalSessionSource[] = [];
  readonly #listeners = new Set<(sessionId: string) => void>();

  add(source: ExternalSessionSource): void {
    this.#sources.push(source);
  }

  /** The source holding the session, if any holds it. */
  sourceOf(sessionId: string): ExternalSessionSource | undefined {
    return this.#sources.find((source) => source.session(sessionId) !== undefined);
  }

  /** A source's task changed: subscribers get a fresh snapshot. */
  changed(sessionId: string): void {
    for (const listener of this.#listeners) listener(sessionId);
  }

  onChange(listener: (sessionId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
