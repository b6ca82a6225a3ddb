import { setImmediate as nextTurn } from "node:timers";
import type { AskStore } from "../store/asks.ts";
import { Emitter } from "../util/emitter.ts";
import type { ElicitationAsk, ElicitResponse } from "./elicitation.ts";
import type { AnswerResult, AskOutcome, AskState, PendingAsk } from "./pending.ts";
import { pendingFromRow, settleOf, stateFromRow } from "./rows.ts";
import type { AskAnswer, AskQuestion } from "./schema.ts";

/**
 * Pending `ask_user_questions` calls. With a store (the service), every ask is a SQLite row from `register`
 * on and this registry is a cache of the pending rows plus the promises the waiting calls hold; without one
 * (unit tests) it is memory only. Every way out — answer, timeout, cancel, supersede — is a compare-and-set
 * on the row, so the first answer wins across surfaces and processes and `complete` is true only for it.
 * On start the pending rows come back with their request ids and deadlines (`restore`).
 */

/** How soon a timeout whose row could not be written is tried again. */
const RETRY_MS = 1_000;

export interface AskRegistryEvents extends Record<string, unknown> {
  registered: PendingAsk;
  settled: { ask: PendingAsk; outcome: AskOutcome };
  extended: PendingAsk;
}

export interface AskRegistryDeps {
  timeoutMs: number;
  now: () => number;
  newId: () => string;
  onListenerError: (error: unknown, event: string) => void;
  /** The ask rows; without it asks live in memory only. */
  store?: AskStore;
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
    reason?: string;
    timeoutMs?: number;
    toolCallId?: string;
    elicitation?: ElicitationAsk;
    declinable?: boolean;
  }): PendingAsk {
    const createdAt = this.#deps.now();
    const ask: PendingAsk = {
      requestId: this.#deps.newId(),
      sessionId: input.sessionId,
      runId: input.runId,
      ...(input.toolCallId ? { toolCallId: input.toolCallId } : {}),
      answererId: input.answererId,
      questions: input.questions,
      metadata: input.metadata,
      surfaces: input.surfaces ?? [],
      ...(input.reason !== undefined ? { reason: input.reason } : {}),
      ...(input.elicitation ? { elicitation: input.elicitation } : {}),
      ...(input.declinable ? { declinable: true as const } : {}),
      createdAt,
      expiresAt: createdAt + (input.timeoutMs ?? this.#deps.timeoutMs),
      extendedMs: 0,
    };
    // The row first: an ask that could not be written is not asked (the caller gets the error).
    if (!ask.elicitation) this.#deps.store?.insert(ask);
    this.#track(ask);
    this.#events.emit("registered", ask);
    return ask;
  }

  /**
   * On start: every pending row comes back with its request id and deadline (an ask whose deadline passed
   * while the process was down times out now). Returns the asks restored. No `registered` event: nothing
   * new was asked; surfaces read `getPendingForSession` as they come up.
   */
  restore(): PendingAsk[] {
    const restored: PendingAsk[] = [];
    for (const row of this.#deps.store?.pending() ?? []) {
      if (this.#entries.has(row.requestId)) continue;
      const ask = pendingFromRow(row);
      this.#track(ask);
      restored.push(ask);
    }
    return restored;
  }

  /** Resolves when the ask settles, however it settles; an ask settled earlier (or before a restart) at once. */
  waitForAnswer(requestId: string): Promise<AskOutcome> {
    const entry = this.#entries.get(requestId);
    if (entry) return entry.promise;
    const settled = this.state(requestId)?.outcome;
    return Promise.resolve(settled ?? { kind: "cancelled", reason: "Unknown request" });
  }

  /**
   * First answer wins: ok when this call settled the ask; refused when it was already settled or unknown
   * (`gone`), or when `by` is not the ask's answerer (`forbidden`: the ask stays pending). Only the person
   * asked may answer (the run's sender; for an outside agent's question, the person it asked), whichever
   * surface the answer comes from.
   */
  complete(
    sessionId: string,
    requestId: string,
    answers: AskAnswer[],
    by: { surface: string; userId: string },
  ): AnswerResult {
    return this.#byAnswerer(sessionId, requestId, by, false, {
      kind: "answered",
      answers,
      surface: by.surface,
      userId: by.userId,
    });
  }

  /** An elicitation's answer (accept, decline or cancel); first answer wins and only its answerer's, as with `complete`. */
  respond(
    sessionId: string,
    requestId: string,
    response: ElicitResponse,
    by: { surface: string; userId: string },
  ): AnswerResult {
    return this.#byAnswerer(sessionId, requestId, by, true, {
      kind: "answered",
      answers: [],
      response,
      ...by,
    });
  }

  /** 拒绝回答 (person-actions.ts checks which asks may be declined): as with `complete`. */
  decline(sessionId: string, requestId: string, by: { surface: string; userId: string }): AnswerResult {
    return this.#byAnswerer(sessionId, requestId, by, false, {
      kind: "declined",
      surface: by.surface,
      userId: by.userId,
    });
  }

  /** The one rule of a person's settle: the pending ask of that session (an elicitation's, for `respond`), by its answerer. */
  #byAnswerer(
    sessionId: string,
    requestId: string,
    by: { userId: string },
    elicitationOnly: boolean,
    outcome: AskOutcome,
  ): AnswerResult {
    const ask = this.#entries.get(requestId)?.ask;
    if (!ask || ask.sessionId !== sessionId || (elicitationOnly && !ask.elicitation))
      return { ok: false, reason: "gone" };
    if (ask.answererId !== by.userId) return { ok: false, reason: "forbidden" };
    return this.#settle(requestId, outcome) ? { ok: true } : { ok: false, reason: "gone" };
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

  /** A new message replaced the run (取消并处理新消息): its asks end as superseded. */
  supersede(sessionId: string, reason: string): number {
    let count = 0;
    for (const requestId of [...(this.#bySession.get(sessionId) ?? [])]) {
      if (this.#settle(requestId, { kind: "cancelled", reason, superseded: true })) count += 1;
    }
    return count;
  }

  /**
   * 延长: moves a pending ask's deadline by `byMs`, unless the asks's extensions would pass `maxTotalMs`.
   * Returns the ask with its new deadline, or undefined when it is not pending or the bound is reached.
   */
  extend(requestId: string, byMs: number, maxTotalMs: number): PendingAsk | undefined {
    const entry = this.#entries.get(requestId);
    if (!entry || entry.ask.extendedMs + byMs > maxTotalMs) return undefined;
    const { store } = this.#deps;
    if (store && !store.extend(requestId, byMs, maxTotalMs)) return undefined;
    entry.ask.expiresAt += byMs;
    entry.ask.extendedMs += byMs;
    clearTimeout(entry.timer);
    entry.timer = this.#timer(entry.ask);
    this.#events.emit("extended", entry.ask);
    return entry.ask;
  }

  get(requestId: string): PendingAsk | undefined {
    return this.#entries.get(requestId)?.ask;
  }

  /** An ask by id, pending or settled (settled ones from the rows; memory-only registries forget them). */
  state(requestId: string): AskState | undefined {
    const entry = this.#entries.get(requestId);
    if (entry) return { ask: entry.ask, status: "pending", outcome: undefined };
    const row = this.#deps.store?.get(requestId);
    return row ? stateFromRow(row) : undefined;
  }

  /** The ask a tool call made, if it made one (a resumed turn's call finds its ask again). */
  forToolCall(runId: string, toolCallId: string): AskState | undefined {
    for (const entry of this.#entries.values()) {
      if (entry.ask.runId === runId && entry.ask.toolCallId === toolCallId) {
        return { ask: entry.ask, status: "pending", outcome: undefined };
      }
    }
    const row = this.#deps.store?.byToolCall(runId, toolCallId);
    return row ? stateFromRow(row) : undefined;
  }

  /** The run's most recent ask, pending or settled (the card's one-line reason once an ask is gone). */
  latestOfRun(runId: string): AskState | undefined {
    const row = this.#deps.store?.latestOfRun(runId);
    return row ? (this.state(row.requestId) ?? stateFromRow(row)) : undefined;
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

  #track(ask: PendingAsk): void {
    let resolve!: (outcome: AskOutcome) => void;
    const promise = new Promise<AskOutcome>((r) => {
      resolve = r;
    });
    this.#entries.set(ask.requestId, { ask, promise, resolve, timer: this.#timer(ask) });
    const ids = this.#bySession.get(ask.sessionId) ?? new Set<string>();
    ids.add(ask.requestId);
    this.#bySession.set(ask.sessionId, ids);
  }

  /** The deadline is absolute (from the moment of asking, resume seed D3): a restart does not restart it. */
  #timer(ask: PendingAsk): ReturnType<typeof setTimeout> {
    const delay = Math.max(0, ask.expiresAt - this.#deps.now());
    const timer = setTimeout(() => this.#expire(ask.requestId), delay);
    timer.unref?.();
    return timer;
  }

  #expire(requestId: string): void {
    try {
      this.#settle(requestId, { kind: "timeout" });
    } catch (error) {
      // The row could not be written (a full disk, a locked file): the ask stays pending and its timeout
      // is tried again shortly, rather than the process dying on a timer.
      this.#deps.onListenerError(error, "timeout");
      const entry = this.#entries.get(requestId);
      if (!entry) return;
      entry.timer = setTimeout(() => this.#expire(requestId), RETRY_MS);
      entry.timer.unref?.();
    }
  }

  #settle(requestId: string, outcome: AskOutcome): boolean {
    const entry = this.#entries.get(requestId);
    if (!entry) return false;
    // The compare-and-set decides. A row another process settled first wins over this call: the waiting
    // call gets that outcome, and this caller is told it lost. A write that throws leaves the ask pending.
    const { store } = this.#deps;
    let final = outcome;
    let won = true;
    if (store && !entry.ask.elicitation && !store.settle(requestId, settleOf(outcome, this.#deps.now()))) {
      won = false;
      const row = store.get(requestId);
      final = (row && stateFromRow(row).outcome) ?? { kind: "cancelled", reason: "Unknown request" };
    }
    this.#entries.delete(requestId);
    const ids = this.#bySession.get(entry.ask.sessionId);
    ids?.delete(requestId);
    if (ids?.size === 0) this.#bySession.delete(entry.ask.sessionId);
    clearTimeout(entry.timer);
    // Surfaces hear of the settle at once; the waiting tool call resumes on the event loop's next turn, so
    // the answer's own response (a card callback, a WebSocket ack) and others already waiting go out before
    // the run's next step takes the CPU. (node:timers, not the global: fake clocks in tests leave it alone.)
    nextTurn(() => entry.resolve(final));
    this.#events.emit("settled", { ask: entry.ask, outcome: final });
    return won;
  }
}
