import { randomUUID } from "node:crypto";
import type { AskRegistry } from "../asks/registry.ts";
import { parseAskInput } from "../asks/schema.ts";
import type { CardPlacement } from "../domain/run-feed.ts";
import type { RunView, Step } from "../domain/types.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { strings } from "../strings.ts";
import { AgentGuard } from "./guard.ts";
import { type AgentAsk, AskLedger } from "./ledger.ts";
import type { RateRule } from "./rate-limit.ts";
import type {
  AskResult,
  AskUserQuestionsInput,
  FinishTaskInput,
  ReportProgressInput,
  StartTaskInput,
} from "./schemas.ts";
import { AgentTaskFeed } from "./sessions.ts";
import { type AgentStore, storedRunSchema } from "./store.ts";
import type { AgentPrincipal } from "./token.ts";
import { type WaitOptions, waitForSettle } from "./wait.ts";
import { type WaitHold, type WaitLimits, WaitSlots } from "./wait-slots.ts";

/**
 * What an outside agent may do, whatever it speaks (MCP at /mcp, plain HTTP at /api): open a progress card,
 * report steps, ask on it, read the answers, finish. Every check — the allow-list, the rate limits, the
 * answerer rule — runs before the card or form exists, so a refused call shows nothing to anyone.
 * The tasks are a run feed (`feed`, sessions.ts) like the bot's own runs: a task's card goes out when the feed
 * says it started, and follows its changes, through the same card machinery as a run's (feishu/ listens to the
 * joined feed and knows no agents-api). A card an ended task still owes after a restart is repaired there too.
 */

export interface AgentTasksOptions {
  registry: AskRegistry;
  now: () => number;
  newId?: () => string;
  /** The ask deadline when the agent gives no timeout_s (ASK_TIMEOUT_MS). */
  askTimeoutMs: number;
  /** New cards and questions per agent, and per person or chat shown them. */
  perAgent?: RateRule;
  perTarget?: RateRule;
  /** A person's display name for the wait notifications, when known (local mode knows Alice, Bob, Carol). */
  nameOf?: (openId: string) => string | undefined;
  /** How often a waiting call reports progress (15 s). */
  progressIntervalMs?: number;
  /** Calls that may wait for answers at once, per agent and in all (wait-slots.ts). */
  waits?: Partial<WaitLimits>;
  /** Tasks and asks kept across restarts; without it they live in memory only. */
  store?: AgentStore;
  logger?: Logger;
  /** Tasks one agent (by name) may keep running at once, question cards included (20). */
  maxLiveTasks?: number;
  /**
   * report_progress calls on one task within this long are one write, one card update and one feed change
   * (250 ms): an agent reporting a step per millisecond costs what one reporting four a second does.
   */
  stepsCoalesceMs?: number;
}

interface AgentTask {
  agent: string;
  /** The token that made it: only that token may use it (undefined for tasks from before token ids). */
  tokenId?: string;
  to: string;
  chatType: "private" | "group";
  /** A question card opened by ask_user_questions without a task: it ends when its question does. */
  implicit: boolean;
  run: RunView;
}

const MAX_STEPS = 200;
const MAX_TASKS_KEPT = 5000;
const MAX_LIVE_TASKS = 20;
const STEPS_COALESCE_MS = 250;

export class AgentTasks {
  readonly #o: AgentTasksOptions;
  readonly #tasks = new Map<string, AgentTask>();
  readonly #guard: AgentGuard;
  readonly #newId: () => string;
  readonly ledger: AskLedger;
  readonly waits: WaitSlots;
  /** The tasks as the run feed's sessions (sessions.ts): what the hub and the session pages read. */
  readonly feed: AgentTaskFeed;
  /** Tasks whose steps changed since they were last written and shown, with when that last happened. */
  readonly #unflushed = new Map<string, NodeJS.Timeout>();
  readonly #flushedAt = new Map<string, number>();

  constructor(options: AgentTasksOptions) {
    this.#o = options;
    this.#newId = options.newId ?? randomUUID;
    this.#guard = new AgentGuard(options);
    this.waits = new WaitSlots(options.waits);
    this.feed = new AgentTaskFeed({
      tasksOf: (sessionId) => this.tasksOf(sessionId),
      taskRun: (runId) => this.#tasks.get(runId)?.run ?? this.#storedRun(runId),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.ledger = new AskLedger(options.registry, {
      now: options.now,
      ...(options.store ? { store: options.store } : {}),
    });
    options.registry.on("settled", ({ ask, outcome }) => this.#endImplicit(ask.runId, outcome.kind));
  }

  /** The tasks shown in one session (`agent:<name>:<to>`), oldest first: what the session page shows. */
  tasksOf(sessionId: string): { agent: string; to: string; chatType: "private" | "group"; run: RunView }[] {
    const found = [];
    for (const task of this.#tasks.values())
      if (task.run.sessionId === sessionId)
        found.push({ agent: task.agent, to: task.to, chatType: task.chatType, run: task.run });
    return found;
  }

  /** After a restart: every task that was running gets its card back and takes calls again. */
  resume(): number {
    const stored = this.#o.store?.runningTasks() ?? [];
    let resumed = 0;
    for (const row of stored) {
      const run = storedRunSchema.safeParse(row.run);
      if (!run.success) continue;
      const task: AgentTask = {
        agent: row.agent,
        ...(row.tokenId ? { tokenId: row.tokenId } : {}),
        to: row.to,
        chatType: row.chatType,
        implicit: row.implicit,
        // Rows from before runs named their agent: the row's column does.
        run: { ...run.data, agent: row.agent },
      };
      this.#tasks.set(row.id, task);
      this.feed.started(task.run, this.#placement(task), true);
      resumed += 1;
    }
    // Ended tasks whose card never got its final state are the card side's to repair (feishu repairEnded reads
    // them through the feed: `#storedRun`).
    return resumed;
  }

  /** An ended task from before a restart, as last written (the feed's reads need no task in memory). */
  #storedRun(runId: string): RunView | undefined {
    const row = this.#o.store?.task(runId);
    if (!row) return undefined;
    const run = storedRunSchema.safeParse(row.run);
    return run.success ? { ...run.data, agent: row.agent } : undefined;
  }

  startTask(who: AgentPrincipal, input: StartTaskInput): { task_id: string } {
    this.#guard.mayReach(who, input.to);
    this.#mayOpen(who);
    this.#guard.mayShow(who, input.to, input.to);
    const task = this.#open(who, input.to, input.title, false);
    this.#o.logger?.info({ agent: who.agent, taskId: task.run.id, to: input.to }, "agent task started");
    return { task_id: task.run.id };
  }

  reportProgress(who: AgentPrincipal, input: ReportProgressInput): { task_id: string; steps: number } {
    const task = this.#running(who, input.task_id);
    const now = this.#o.now();
    const status = input.status ?? "running";
    const steps = [...task.run.steps];
    // The same step text updates that step (running → done); a new text is a new step.
    const index = steps.findLastIndex((step) => step.title === input.step);
    const previous = index >= 0 ? steps[index] : undefined;
    const step: Step = {
      id: previous?.id ?? `s${steps.length + 1}`,
      tool: "agent",
      title: input.step,
      status,
      ...(input.detail ? { summary: input.detail } : {}),
      startedAt: previous?.startedAt ?? now,
      ...(status !== "running" ? { endedAt: now } : {}),
    };
    if (previous) steps[index] = step;
    else steps.push(step);
    task.run = { ...task.run, steps: steps.slice(-MAX_STEPS) };
    this.#soon(task);
    return { task_id: task.run.id, steps: task.run.steps.length };
  }

  /** Writes and shows every task whose latest steps are still held back (shutdown calls it). */
  flush(): void {
    for (const id of [...this.#unflushed.keys()]) {
      const task = this.#tasks.get(id);
      if (task) this.#update(task, {});
      else this.#forget(id);
    }
  }

  /** Registers the question on the card (after every check) and returns its ask id; `wait` gets the answer. */
  ask(who: AgentPrincipal, input: AskUserQuestionsInput): string {
    // The shared question rules (unique texts and labels, limits) from the one module that owns them.
    const parsed = parseAskInput({
      questions: input.questions,
      ...(input.metadata ? { metadata: input.metadata } : {}),
    });
    if (!parsed.ok) throw new AppError("INVALID_INPUT", parsed.error);
    const existing = input.task_id !== undefined ? this.#running(who, input.task_id) : undefined;
    if (existing && input.to !== undefined && input.to !== existing.to)
      throw new AppError(
        "INVALID_INPUT",
        `to: task ${existing.run.id} is shown to ${existing.to}, not ${input.to}`,
      );
    const to = existing?.to ?? input.to;
    if (to === undefined)
      throw new AppError("INVALID_INPUT", "give task_id (ask on its card) or to (a new card)");
    const group = to.startsWith("oc_");
    if (group && input.answerer === undefined)
      throw new AppError("INVALID_INPUT", "answerer: required in a group chat (the open_id who may answer)");
    if (!group && input.answerer !== undefined && input.answerer !== to)
      throw new AppError("INVALID_INPUT", "answerer: in a private chat only its person can answer");
    const answerer = input.answerer ?? to;
    const questions = parsed.value.questions.map((question) => ({
      ...question,
      // Option previews from outside agents are plain text: no fence of their own, so no markdown renders.
      options: question.options.map((option) =>
        option.preview === undefined
          ? option
          : { ...option, preview: option.preview.replaceAll("```", "'''") },
      ),
    }));
    const twinKey = JSON.stringify([who.agent, existing?.run.id ?? `to:${to}`, answerer, questions]);
    const twin = this.#twin(who, existing, to, answerer, questions) ?? this.ledger.undeliveredTwin(twinKey);
    if (twin !== undefined) {
      this.#guard.mayReach(who, to);
      this.#o.logger?.info({ agent: who.agent, askId: twin }, "agent asked again: joined the open question");
      return twin;
    }
    this.#guard.mayReach(who, to);
    if (existing === undefined) this.#mayOpen(who);
    this.#guard.mayShow(who, to, answerer);
    const title = input.reason ?? questions[0]?.question ?? strings.agents.questionCardTitle(who.agent);
    // A new question card's task is only a draft until its question is registered: a call that fails
    // there leaves no task behind (no row that would come back as a card stuck at 执行中 after a restart).
    const task = existing ?? this.#draft(who, to, title, true);
    const fresh = existing === undefined;
    const previousSender = task.run.senderId;
    // A group card's forms name whose answer they wait for: the answerer of its latest question.
    if (previousSender !== answerer) {
      if (fresh) task.run = { ...task.run, senderId: answerer };
      else this.#update(task, { senderId: answerer });
    }
    // The form goes on the card as the card is now: with the steps held back (#soon) on it.
    if (!fresh && this.#unflushed.has(task.run.id)) this.#update(task, {});
    const timeoutMs = input.timeout_s !== undefined ? input.timeout_s * 1000 : this.#o.askTimeoutMs;
    let ask: ReturnType<AskRegistry["register"]>;
    try {
      ask = this.#o.registry.register({
        sessionId: task.run.sessionId,
        runId: task.run.id,
        answererId: answerer,
        questions,
        ...(parsed.value.metadata ? { metadata: parsed.value.metadata } : {}),
        surfaces: ["feishu"],
        ...(input.reason !== undefined ? { reason: input.reason } : {}),
        timeoutMs,
        // The agent reads a 拒绝回答 as status "declined" (ledger.ts): the person may say no.
        declinable: true,
      });
    } catch (error) {
      if (!fresh && previousSender !== answerer) this.#update(task, { senderId: previousSender });
      throw error;
    }
    if (fresh) this.#adopt(task);
    const entry: AgentAsk = {
      askId: ask.requestId,
      agent: who.agent,
      tokenId: who.tokenId,
      taskId: task.run.id,
      answererId: answerer,
      createdAt: ask.createdAt,
      expiresAt: ask.expiresAt,
      twinKey,
    };
    this.ledger.add(entry);
    this.#o.logger?.info(
      { agent: who.agent, askId: ask.requestId, taskId: task.run.id, answerer, questions: questions.length },
      "agent asked",
    );
    // A new question card goes out once its question is registered, so its first send carries the form.
    if (fresh) this.#show(task);
    return ask.requestId;
  }

  /**
   * Asks and waits, the wait's place taken first: a call refused for too many waits shows nothing to anyone
   * (its ask id would be lost with the refusal).
   */
  async askAndWait(
    who: AgentPrincipal,
    input: AskUserQuestionsInput,
    options: WaitOptions,
  ): Promise<AskResult> {
    const hold = this.waits.hold(who.agent, options.waitMs);
    try {
      return await this.wait(who, this.ask(who, input), options, hold);
    } finally {
      hold.release();
    }
  }

  /**
   * The ask's result now, or after waiting up to `waitMs` for it to settle. A call that has to wait takes a
   * place (wait-slots.ts) unless it holds one already; one that finds the ask settled needs none.
   */
  async wait(who: AgentPrincipal, askId: string, options: WaitOptions, held?: WaitHold): Promise<AskResult> {
    const entry = this.#ask(who, askId);
    if (!this.ledger.settledOutcome(askId) && !this.#o.registry.state(askId)) this.ledger.markLost(askId);
    if (!this.ledger.settledOutcome(askId)) {
      const hold = held ?? this.waits.hold(who.agent, options.waitMs);
      const name = this.#o.nameOf?.(entry.answererId) ?? entry.answererId;
      try {
        await waitForSettle(this.#o.registry.waitForAnswer(askId), {
          ...options,
          intervalMs: this.#o.progressIntervalMs ?? 15_000,
          message: () => strings.agents.waiting(name, Math.floor((this.#o.now() - entry.createdAt) / 60_000)),
        });
      } finally {
        hold.release();
      }
    }
    // Handed to a caller still there, the id is known: a later answer is for get_answers, and asking the
    // same again once this one has ended is a new question.
    if (!options.signal?.aborted) this.ledger.handed(askId);
    return this.ledger.result(askId);
  }

  cancelQuestion(who: AgentPrincipal, askId: string): AskResult {
    this.#ask(who, askId);
    this.#o.registry.cancel(askId, `cancelled by ${who.agent}`);
    return this.ledger.result(askId);
  }

  finishTask(who: AgentPrincipal, input: FinishTaskInput): { task_id: string; status: string } {
    const task = this.#owned(who, input.task_id);
    if (task.run.status !== "running") return { task_id: task.run.id, status: task.run.status };
    this.#finish(task, input.status, input.text);
    return { task_id: task.run.id, status: input.status };
  }

  // --------------------------------------------------------------------------------------------------

  #open(who: AgentPrincipal, to: string, title: string, implicit: boolean): AgentTask {
    const task = this.#draft(who, to, title, implicit);
    this.#adopt(task);
    if (!implicit) this.#show(task);
    return task;
  }

  /** A task not yet kept anywhere: nothing is written or shown until `#adopt`. */
  #draft(who: AgentPrincipal, to: string, title: string, implicit: boolean): AgentTask {
    const chatType = to.startsWith("oc_") ? "group" : "private";
    const id = this.#newId();
    const run: RunView = {
      id,
      // The agent's name is in the session id, so the ask audit rows say which agent asked.
      sessionId: `agent:${who.agent}:${to}`,
      senderId: chatType === "private" ? to : "",
      input: title,
      status: "running",
      steps: [],
      startedAt: this.#o.now(),
      agent: who.agent,
    };
    return { agent: who.agent, tokenId: who.tokenId, to, chatType, implicit, run };
  }

  #adopt(task: AgentTask): void {
    this.#remember(task.run.id, task);
    this.feed.changed(task.run);
  }

  #show(task: AgentTask): void {
    this.feed.started(task.run, this.#placement(task), false);
  }

  /** An agent's card is sent to its person or group: there is no message of theirs to reply to. */
  #placement(task: AgentTask): CardPlacement {
    const to = task.chatType === "group" ? { chatId: task.to } : { openId: task.to };
    return { kind: "send", to, chatType: task.chatType };
  }

  #save(task: AgentTask): void {
    this.#o.store?.saveTask({ id: task.run.id, ...task, status: task.run.status }, this.#o.now());
  }

  #remember(id: string, task: AgentTask): void {
    this.#tasks.set(id, task);
    this.#save(task);
    if (this.#tasks.size <= MAX_TASKS_KEPT) return;
    for (const [oldId, old] of this.#tasks) {
      if (this.#tasks.size <= MAX_TASKS_KEPT) break;
      if (old.run.status !== "running") this.#tasks.delete(oldId);
    }
  }

  /**
   * Steps are written and shown at most once per `stepsCoalesceMs` per task: the first at once, the rest
   * together at the end of the window. Anything else that changes the task (a question, the end) writes
   * the steps held back with it.
   */
  #soon(task: AgentTask): void {
    const id = task.run.id;
    if (this.#unflushed.has(id)) return;
    const windowMs = this.#o.stepsCoalesceMs ?? STEPS_COALESCE_MS;
    const waitMs = (this.#flushedAt.get(id) ?? Number.NEGATIVE_INFINITY) + windowMs - this.#o.now();
    if (waitMs <= 0) {
      this.#update(task, {});
      return;
    }
    const timer = setTimeout(() => {
      this.#unflushed.delete(id);
      const current = this.#tasks.get(id);
      if (current) this.#update(current, {});
    }, waitMs);
    timer.unref();
    this.#unflushed.set(id, timer);
  }

  #forget(id: string): void {
    clearTimeout(this.#unflushed.get(id));
    this.#unflushed.delete(id);
    this.#flushedAt.delete(id);
  }

  /** One agent keeps at most `maxLiveTasks` running: a new card past that is refused before it exists. */
  #mayOpen(who: AgentPrincipal): void {
    const max = this.#o.maxLiveTasks ?? MAX_LIVE_TASKS;
    let live = 0;
    for (const task of this.#tasks.values())
      if (task.agent === who.agent && task.run.status === "running") live += 1;
    if (live >= max)
      throw new AppError(
        "RATE_LIMITED",
        `agent "${who.agent}" has ${live} tasks running, the most it may keep: finish_task one first`,
      );
  }

  #update(task: AgentTask, patch: Partial<RunView>): void {
    const id = task.run.id;
    clearTimeout(this.#unflushed.get(id));
    this.#unflushed.delete(id);
    task.run = { ...task.run, ...patch };
    if (task.run.status === "running") this.#flushedAt.set(id, this.#o.now());
    else this.#forget(id);
    this.#save(task);
    this.feed.changed(task.run);
  }

  #finish(task: AgentTask, status: "completed" | "failed" | "cancelled", text: string | undefined): void {
    for (const ask of this.#o.registry.getPendingForSession(task.run.sessionId))
      if (ask.runId === task.run.id) this.#o.registry.cancel(ask.requestId, `task ${status}`);
    this.#update(task, {
      status,
      endedAt: this.#o.now(),
      ...(status === "failed" ? { error: text ?? "" } : text !== undefined ? { text } : {}),
    });
  }

  #endImplicit(taskId: string, outcome: string): void {
    const task = this.#tasks.get(taskId);
    if (!task?.implicit || task.run.status !== "running") return;
    const pending = this.#o.registry.getPendingForSession(task.run.sessionId).some((a) => a.runId === taskId);
    if (pending) return;
    const answered = outcome === "answered";
    this.#finish(task, "completed", answered ? strings.agents.answered : strings.agents.notAnswered);
  }

  /**
   * The same questions from the same agent to the same answerer, still open, on the same task (or, without a
   * task, on a question card for the same person): a client whose own timeout cut the first call asks again
   * and must land on the form already shown, not stack a second one (issue 31).
   */
  #twin(
    who: AgentPrincipal,
    existing: AgentTask | undefined,
    to: string,
    answerer: string,
    questions: unknown,
  ): string | undefined {
    const same = JSON.stringify(questions);
    for (const ask of this.#o.registry.getPendingForSession(`agent:${who.agent}:${to}`)) {
      const scoped = existing ? ask.runId === existing.run.id : this.#tasks.get(ask.runId)?.implicit === true;
      if (!scoped || ask.answererId !== answerer || !this.ledger.get(who, ask.requestId)) continue;
      if (JSON.stringify(ask.questions) === same) return ask.requestId;
    }
    return undefined;
  }

  #owned(who: AgentPrincipal, taskId: string): AgentTask {
    const task = this.#tasks.get(taskId);
    // Another agent's task is as unknown as one that never was — and so is one made by another token of the
    // same name (issue 24 item 11): a name is a label, the token is the identity.
    if (!task || !ownedBy(task, who)) throw new AppError("NOT_FOUND", `no task ${taskId}`);
    return task;
  }

  #running(who: AgentPrincipal, taskId: string): AgentTask {
    const task = this.#owned(who, taskId);
    if (task.run.status !== "running")
      throw new AppError("CONFLICT", `task ${taskId} is ${task.run.status}; start a new task`);
    return task;
  }

  #ask(who: AgentPrincipal, askId: string): AgentAsk {
    const entry = this.ledger.get(who, askId);
    if (!entry) throw new AppError("NOT_FOUND", `no question ${askId}`);
    return entry;
  }
}

/**
 * Whether `who` may use a task or ask: made by its token. Rows from before token ids (no `tokenId`) fall back
 * to the agent's name, as they were made; every row written since carries its token's id.
 */
export function ownedBy(made: { agent: string; tokenId?: string | undefined }, who: AgentPrincipal): boolean {
  if (made.agent !== who.agent) return false;
  return made.tokenId === undefined || made.tokenId === who.tokenId;
}
