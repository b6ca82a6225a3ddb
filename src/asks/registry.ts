import { setImmediate as nextTurn } from "node:timers";
import { Emitter } from "../util/emitter.ts";
import type { ElicitationAsk, ElicitResponse } from "./elicitation.ts";
import type { AskAnswer, AskQuestion } from "./schema.ts";

/**
 * Pending `ask_user_questions` calls, in memory (a waiting tool call cannot outlive its process).
 * Every way out — answer, timeout, session cancel — settles the entry exactly once and removes it;
 * `complete` returns true only for the first answer, so two surfaces racing never both win.
 */

export type AskOutcome =
  | {
      kind: "answered";
      answers: AskAnswer[];
      surface: string;
      userId: string;
      /** Set for an MCP elicitation (its `answers` are empty): accept with content, decline or cancel. */
      response?: ElicitResponse;
    }
  | { kind: "timeout" }
  | { kind: "cancelled"; reason: string };

export interface PendingAsk {
  requestId: string;
  sessionId: string;
  runId: string;
  /** The run's sender: the only person who may answer. */
  answererId: string;
  questions: AskQuestion[];
  metadata: Record<string, unknown> | undefined;
  /** The surfaces that could reach the answerer when the question was asked (for the audit). */
  surfaces: string[];
  /** The second kind of ask: an MCP server's form (its `questions` are empty). */
  elicitation?: ElicitationAsk;
  createdAt: number;
  expiresAt: number;
}

export interface AskRegistryEvents extends Record<string, unknown> {
  registered: PendingAsk;
  settled: { ask: PendingAsk; outcome: AskOutcome };
}

export interface AskRegistryDeps {
  timeoutMs: number;
  now: () => number;
  newId: () => string;
  onListenerError: (error: unknown, event: string) => void;
}

interface Entry {
  ask: PendingAsk;
  promise: Promise<AskOutcome>;
  resolve: (outcome: AskOutcome) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class AskRegistry {
  readonly #entries = new Map<string, Entry>();
  /** Request ids of the pending asks of each session, in the order they were asked. */
  readonly #bySession = new Map<string, Set<string>>();
  readonly #events: Emitter<AskRegistryEvents>;
  readonly #deps: AskRegistryDeps;

  constructor(deps: AskRegistryDeps) {
    this.#deps = deps;
    this.#events = new Emitter<AskRegistryEvents>((error, event) =>
      deps.onListenerError(error, String(event)),
    );
  }

  on<K extends keyof AskRegistryEvents>(
    event: K,
    listener: (payload: AskRegistryEvents[K]) => void,
  ): () => void {
    return this.#events.on(event, listener);
  }

  register(input: {
    sessionId: string;
    runId: string;
    answererId: string;
    questions: AskQuestion[];
    metadata?: Record<string, unknown>;
    surfaces?: string[];
    timeoutMs?: number;
    elicitation?: ElicitationAsk;
  }): PendingAsk {
    const createdAt = this.#deps.now();
    const timeoutMs = input.timeoutMs ?? this.#deps.timeoutMs;
    const ask: PendingAsk = {
      requestId: this.#deps.newId(),
      sessionId: input.sessionId,
      runId: input.runId,
      answererId: input.answererId,
      questions: input.questions,
      metadata: input.metadata,
      surfaces: input.surfaces ?? [],
      ...(input.elicitation ? { elicitation: input.elicitation } : {}),
      createdAt,
      expiresAt: createdAt + timeoutMs,
    };
    let resolve!: (outcome: AskOutcome) => void;
    const promise = new Promise<AskOutcome>((r) => {
      resolve = r;
    });
    // The timeout counts from the moment of asking and does not pause while clients are away (resume seed D3).
    const timer = setTimeout(() => this.#settle(ask.requestId, { kind: "timeout" }), timeoutMs);
    timer.unref?.();
    this.#entries.set(ask.requestId, { ask, promise, resolve, timer });
    const ids = this.#bySession.get(ask.sessionId) ?? new Set<string>();
    ids.add(ask.requestId);
    this.#bySession.set(ask.sessionId, ids);
    this.#events.emit("registered", ask);
    return ask;
  }

  /** Resolves when the ask settles, however it settles. Unknown ids resolve as cancelled at once. */
  waitForAnswer(requestId: string): Promise<AskOutcome> {
    const entry = this.#entries.get(requestId);
    return entry ? entry.promise : Promise.resolve({ kind: "cancelled", reason: "Unknown request" });
  }

  /** First answer wins: true when this call settled the ask, false when it was already settled or unknown. */
  complete(
    sessionId: string,
    requestId: string,
    answers: AskAnswer[],
    by: { surface: string; userId: string },
  ): boolean {
    const entry = this.#entries.get(requestId);
    if (!entry || entry.ask.sessionId !== sessionId) return false;
    return this.#settle(requestId, { kind: "answered", answers, surface: by.surface, userId: by.userId });
  }

  /** An elicitation's answer (accept, decline or cancel); first answer wins, as with `complete`. */
  respond(
    sessionId: string,
    requestId: string,
    response: ElicitResponse,
    by: { surface: string; userId: string },
  ): boolean {
    const entry = this.#entries.get(requestId);
    if (!entry?.ask.elicitation || entry.ask.sessionId !== sessionId) return false;
    return this.#settle(requestId, { kind: "answered", answers: [], response, ...by });
  }

  /** Settles every pending ask of one session (and only that session). Returns how many it settled. */
  failAllForSession(sessionId: string, reason = "Session cancelled"): number {
    let count = 0;
    for (const requestId of [...(this.#bySession.get(sessionId) ?? [])]) {
      if (this.#settle(requestId, { kind: "cancelled", reason })) count += 1;
    }
    return count;
  }

  /** Settles one ask without an answer (e.g. its run ended while a sibling ask was pending). */
  cancel(requestId: string, reason: string): boolean {
    return this.#settle(requestId, { kind: "cancelled", reason });
  }

  get(requestId: string): PendingAsk | undefined {
    return this.#entries.get(requestId)?.ask;
  }

  getPendingForSession(sessionId: string): PendingAsk[] {
    const asks: PendingAsk[] = [];
    for (const requestId of this.#bySession.get(sessionId) ?? []) {
      const entry = this.#entries.get(requestId);
      if (entry) asks.push(entry.ask);
    }
    return asks.sort((a, b) => a.createdAt - b.createdAt);
  }

  get size(): number {
    return this.#entries.size;
  }

  #settle(requestId: string, outcome: AskOutcome): boolean {
    const entry = this.#entries.get(requestId);
    if (!entry) return false;
    this.#entries.delete(requestId);
    const ids = this.#bySession.get(entry.ask.sessionId);
    ids?.delete(requestId);
    if (ids?.size === 0) this.#bySession.delete(entry.ask.sessionId);
    clearTimeout(entry.timer);
    // Surfaces hear of the settle at once; the waiting tool call resumes on the event loop's next turn, so
    // the answer's own response (a card callback, a WebSocket ack) and others already waiting go out before
    // the run's next step takes the CPU. (node:timers, not the global: fake clocks in tests leave it alone.)
    nextTurn(() => entry.resolve(outcome));
    this.#events.emit("settled", { ask: entry.ask, outcome });
    return true;
  }
}
