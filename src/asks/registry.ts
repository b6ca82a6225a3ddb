import type { AskStore } from "../store/asks.ts";
import { Emitter } from "../util/emitter.ts";
import type { ElicitationAsk, ElicitResponse } from "./elicitation.ts";
import { HeldAsks } from "./held-asks.ts";
import { AskLookups } from "./lookups.ts";
import type { AnswerResult, AskOutcome, AskState, PendingAsk } from "./pending.ts";
import { RowFollow, type SettledElsewhere } from "./row-follow.ts";
import { pendingFromRow, settleOf } from "./rows.ts";
import type { AskAnswer, AskQuestion } from "./schema.ts";

/**
 * Pending `ask_user_questions` calls. With a store (the service), every ask is a row from `register` on (SQLite
 * or Postgres: store/sql.ts) and this registry is a cache of the pending rows plus the promises the waiting
 * calls hold; without one (unit tests) it is memory only. Every way out — answer, timeout, cancel, supersede —
 * is a compare-and-set on the row, so the first answer wins across surfaces, processes and instances, and
 * `complete` is true only for it. On start the pending rows come back with their request ids and deadlines
 * (`restore`).
 *
 * A person's answer (`complete`, `respond`, `decline`) is decided by the row, so it resolves once the row is
 * written. Another instance's ask is held here as a copy once its wake-up or a poll says it was asked
 * (`mirror`), so this instance's surfaces show it; one not held yet is answered from its row alone. The
 * instance that waits on it learns of it by `reconcile` (a wake-up or a poll re-reads the row). The settles the
 * bot makes itself (timeout, cancel, supersede) never reject: a write the database refuses leaves the ask
 * pending and is tried again, so a refused disk or an unreachable Postgres cannot lose one.
 */

const GONE: AnswerResult = { ok: false, reason: "gone" };

export interface AskRegistryEvents extends Record<string, unknown> {
  registered: PendingAsk;
  settled: { ask: PendingAsk; outcome: AskOutcome };
  extended: PendingAsk;
  /** An ask another instance asked, held here from its row so that this instance's surfaces show it (`mirror`). */
  mirrored: PendingAsk;
  /**
   * An ask held here was settled by another instance (its row says so), told just before its `settled`: the
   * card of a question answered on another instance's card waits for that instance's callback answer.
   */
  settledElsewhere: SettledElsewhere;
  /** This registry wrote an ask's row (asked, extended, settled): the other instances re-read it. */
  written: string;
}

export interface AskRegistryDeps {
  timeoutMs: number;
  now: () => number;
  newId: () => string;
  onListenerError: (error: unknown, event: string) => void;
  /** The ask rows; without it asks live in memory only. */
  store?: AskStore;
}

export class AskRegistry {
  readonly #held: HeldAsks;
  readonly #lookups: AskLookups;
  readonly #rows: RowFollow;
  readonly #events: Emitter<AskRegistryEvents>;
  readonly #deps: AskRegistryDeps;

  constructor(deps: AskRegistryDeps) {
    this.#deps = deps;
    this.#held = new HeldAsks({
      now: deps.now,
      store: deps.store,
      onError: deps.onListenerError,
      onReleased: (ask, outcome) => this.#events.emit("settled", { ask, outcome }),
      onWritten: (requestId) => this.#events.emit("written", requestId),
      onMoved: (ask) => this.#events.emit("extended", ask),
    });
    this.#lookups = new AskLookups(this.#held, deps.store);
    this.#rows = new RowFollow(
      this.#held,
      deps.store,
      (event, ask) => this.#events.emit(event, ask),
      (settled) => this.#events.emit("settledElsewhere", settled),
    );
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

  async register(input: {
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
  }): Promise<PendingAsk> {
    const createdAt = this.#deps.now();
    const order = this.#held.nextOrder();
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
    if (!ask.elicitation) await this.#deps.store?.insert(ask);
    this.#held.track(ask, order);
    this.#events.emit("registered", ask);
    if (!ask.elicitation && this.#deps.store) this.#events.emit("written", ask.requestId);
    return ask;
  }

  /**
   * On start: every pending row comes back with its request id and deadline (an ask whose deadline passed
   * while the process was down times out now). Returns the asks restored. No `registered` event: nothing
   * new was asked; surfaces read `getPendingForSession` as they come up.
   */
  async restore(): Promise<PendingAsk[]> {
    const restored: PendingAsk[] = [];
    for (const row of (await this.#deps.store?.pending()) ?? []) {
      if (this.#held.has(row.requestId)) continue;
      const ask = pendingFromRow(row);
      this.#held.track(ask);
      restored.push(ask);
    }
    return restored;
  }

  /** A run adopted from another instance (issue 27): its pending asks are held here from now on, as on start. */
  holdRun = (runId: string): Promise<void> => this.#rows.holdRun(runId);

  /**
   * An ask another instance asked (its wake-up, issue 27): held here too from its row, so that this instance's
   * surfaces show it and an answer here settles it as any held ask (asks/row-follow.ts). The ask when new here.
   */
  mirror = (requestId: string): Promise<PendingAsk | undefined> => this.#rows.mirror(requestId);

  /** `mirror` for every pending row not held here, in one read (a poll). How many were new. */
  mirrorPending = (): Promise<number> => this.#rows.mirrorPending();

  /**
   * Resolves when the ask settles, however it settles; an ask settled earlier (or before a restart) at once. A
   * pending row this registry does not hold (a run adopted from another instance, issue 27) is held from here.
   */
  async waitForAnswer(requestId: string): Promise<AskOutcome> {
    const entry = this.#held.get(requestId);
    if (entry) this.#held.own(entry);
    if (entry) return entry.promise;
    const row = await this.#deps.store?.get(requestId);
    if (row?.status === "pending" && !this.#held.has(requestId)) this.#held.track(pendingFromRow(row));
    const held = this.#held.get(requestId);
    if (held) return held.promise;
    const settled = (await this.state(requestId))?.outcome;
    return settled ?? { kind: "cancelled", reason: "Unknown request" };
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
  ): Promise<AnswerResult> {
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
  ): Promise<AnswerResult> {
    return this.#byAnswerer(sessionId, requestId, by, true, {
      kind: "answered",
      answers: [],
      response,
      ...by,
    });
  }

  /** 拒绝回答 (person-actions.ts checks which asks may be declined): as with `complete`. */
  decline(
    sessionId: string,
    requestId: string,
    by: { surface: string; userId: string },
  ): Promise<AnswerResult> {
    return this.#byAnswerer(sessionId, requestId, by, false, {
      kind: "declined",
      surface: by.surface,
      userId: by.userId,
    });
  }

  /**
   * The one rule of a person's settle: the pending ask of that session (an elicitation's, for `respond`), by
   * its answerer. An ask another instance holds is decided by its row the same way (elicitations live in
   * their instance's memory only: none of ours is `gone`).
   */
  async #byAnswerer(
    sessionId: string,
    requestId: string,
    by: { userId: string },
    elicitationOnly: boolean,
    outcome: AskOutcome,
  ): Promise<AnswerResult> {
    const ask = this.#held.get(requestId)?.ask;
    if (!ask)
      return elicitationOnly
        ? { ok: false, reason: "gone" }
        : this.#fromRow(sessionId, requestId, by, outcome);
    if (ask.sessionId !== sessionId || (elicitationOnly && !ask.elicitation))
      return { ok: false, reason: "gone" };
    if (ask.answererId !== by.userId) return { ok: false, reason: "forbidden" };
    return (await this.#held.settle(requestId, outcome)) ? { ok: true } : { ok: false, reason: "gone" };
  }

  /** An answer to an ask this registry does not hold: the row's compare-and-set decides, nothing else. */
  async #fromRow(
    sessionId: string,
    requestId: string,
    by: { userId: string },
    outcome: AskOutcome,
  ): Promise<AnswerResult> {
    const answerable = await this.#lookups.answerableRow(sessionId, requestId, by);
    if (answerable !== "open" || !this.#deps.store) return answerable === "open" ? GONE : answerable;
    // Held here meanwhile (restored, or reconciled): the ordinary way, one settled event.
    if (this.#held.has(requestId)) return this.#byAnswerer(sessionId, requestId, by, false, outcome);
    if (!(await this.#deps.store.settle(requestId, settleOf(outcome, this.#deps.now())))) return GONE;
    this.#events.emit("written", requestId);
    return { ok: true };
  }

  /**
   * Re-reads an ask this registry holds (a wake-up said its row changed): a row another instance settled settles
   * it here with that outcome, without writing; a deadline another moved (延长) moves here. True when it settled.
   */
  reconcile = (requestId: string): Promise<boolean> => this.#rows.reconcile(requestId);

  /** Its run went to another instance (run-ownership.ts onLost): its asks are copies here, timed out there. */
  letGoOfRun = (runId: string): void => this.#rows.letGoRun(runId);

  /** `reconcile` for every ask held here, in one read (a poll, or the wake-up connection came back). */
  reconcileAll = (): Promise<number> => this.#rows.reconcileAll();

  /** Settles every pending ask of one session (and only that session). Resolves to how many it settled. */
  failAllForSession(sessionId: string, reason = "Session cancelled"): Promise<number> {
    return this.#settleSession(sessionId, { kind: "cancelled", reason });
  }

  /** Settles one ask without an answer (e.g. its run ended while a sibling ask was pending). */
  cancel(requestId: string, reason: string): Promise<boolean> {
    return this.#held.settleRetrying(requestId, { kind: "cancelled", reason });
  }

  /** A new message replaced the run (取消并处理新消息): its asks end as superseded. */
  supersede(sessionId: string, reason: string): Promise<number> {
    return this.#settleSession(sessionId, { kind: "cancelled", reason, superseded: true });
  }

  async #settleSession(sessionId: string, outcome: AskOutcome): Promise<number> {
    const won = await Promise.all(
      this.#held.idsOf(sessionId).map((id) => this.#held.settleRetrying(id, outcome)),
    );
    return won.filter(Boolean).length;
  }

  /** 延长: the deadline moves by `byMs`, its extensions within `maxTotalMs`; the ask as moved, else undefined. */
  async extend(requestId: string, byMs: number, maxTotalMs: number): Promise<PendingAsk | undefined> {
    const entry = this.#held.get(requestId);
    if (!entry) {
      // Not even a copy here (its wake-up not read yet): the row moves, and the wake-up tells its holder.
      const moved = await this.#lookups.extendRow(requestId, byMs, maxTotalMs);
      if (moved) this.#events.emit("written", requestId);
      return moved;
    }
    if (entry.settling || entry.ask.extendedMs + byMs > maxTotalMs) return undefined;
    const { store } = this.#deps;
    if (store && !(await store.extend(requestId, byMs, maxTotalMs))) return undefined;
    if (!this.#held.holds(entry)) return undefined;
    this.#held.moveDeadline(entry, entry.ask.expiresAt + byMs, entry.ask.extendedMs + byMs);
    this.#events.emit("extended", entry.ask);
    if (store) this.#events.emit("written", requestId);
    return entry.ask;
  }

  get(requestId: string): PendingAsk | undefined {
    return this.#held.get(requestId)?.ask;
  }

  /** A pending ask, held here or (several instances) only in its row: what an answer checks before its CAS. */
  open(requestId: string): Promise<PendingAsk | undefined> {
    return this.#lookups.open(requestId);
  }

  /** The run's pending asks: held here, or (several instances) in their rows while another instance holds them. */
  pendingOfRun(sessionId: string, runId: string): Promise<PendingAsk[]> {
    return this.#lookups.pendingOfRun(sessionId, runId);
  }

  /** An ask by id, pending or settled (settled ones from the rows; memory-only registries forget them). */
  state(requestId: string): Promise<AskState | undefined> {
    return this.#lookups.state(requestId);
  }

  /** The ask a tool call made, if it made one (a resumed turn's call finds its ask again). */
  forToolCall(runId: string, toolCallId: string): Promise<AskState | undefined> {
    return this.#lookups.forToolCall(runId, toolCallId);
  }

  /** The run's most recent ask, pending or settled (the card's one-line reason once an ask is gone). */
  latestOfRun(runId: string): Promise<AskState | undefined> {
    return this.#lookups.latestOfRun(runId);
  }

  getPendingForSession(sessionId: string): PendingAsk[] {
    return this.#held.pendingOf(sessionId);
  }

  get size(): number {
    return this.#held.size;
  }
}
