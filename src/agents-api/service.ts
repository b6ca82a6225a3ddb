import { randomUUID } from "node:crypto";
import type { PendingAsk } from "../asks/pending.ts";
import type { AskRegistry } from "../asks/registry.ts";
import type { Step } from "../domain/types.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { strings } from "../strings/index.ts";
import { askTarget, parsedAsk } from "./ask-input.ts";
import { AgentGuard } from "./guard.ts";
import { type AgentAsk, AskLedger } from "./ledger.ts";
import type { RateRule } from "./rate-limit.ts";
import type {
  AskResult,
  AskUserQuestionsInput,
  FinishResult,
  FinishTaskInput,
  ReportProgressInput,
  StartTaskInput,
  StepResult,
} from "./schemas.ts";
import { AgentTaskFeed } from "./sessions.ts";
import type { AgentStore } from "./store.ts";
import { type AgentTask, ownedBy, TaskBook } from "./task-book.ts";
import type { AgentPrincipal } from "./token.ts";
import { AskTwins } from "./twins.ts";
import { type WaitOptions, waitForSettle } from "./wait.ts";
import { type WaitHold, type WaitLimits, WaitSlots } from "./wait-slots.ts";

/**
 * What an outside agent may do, whatever it speaks (MCP at /mcp, plain HTTP at /api): open a progress card,
 * report steps, ask on it, read the answers, finish. Every check — the allow-list, the rate limits, the
 * answerer rule (ask-input.ts) — runs before the card or form exists, so a refused call shows nothing to
 * anyone. The tasks (kept in task-book.ts) are a run feed (`feed`, sessions.ts) like the bot's own runs: a
 * task's card goes out when the feed says it started, and follows its changes, through the same card
 * machinery as a run's (feishu/ listens to the joined feed and knows no agents-api). A card an ended task
 * still owes after a restart is repaired there too.
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

const MAX_STEPS = 200;
const MAX_LIVE_TASKS = 20;
/** How long a cancel_question waits for its write before answering with the ask as it is. */
const CANCEL_WAIT_MS = 2_000;

export class AgentTasks {
  readonly #o: AgentTasksOptions;
  readonly #book: TaskBook;
  readonly #guard: AgentGuard;
  readonly ledger: AskLedger;
  readonly waits: WaitSlots;
  readonly #twins: AskTwins;
  /** The tasks as the run feed's sessions (sessions.ts): what the hub and the session pages read. */
  readonly feed: AgentTaskFeed;

  constructor(options: AgentTasksOptions) {
    this.#o = options;
    this.#guard = new AgentGuard(options);
    this.waits = new WaitSlots(options.waits);
    this.feed = new AgentTaskFeed({
      tasksOf: (sessionId) => this.tasksOf(sessionId),
      taskRun: (runId) => this.#book.get(runId)?.run ?? this.#book.storedRun(runId),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.#book = new TaskBook({
      now: options.now,
      newId: options.newId ?? randomUUID,
      feed: this.feed,
      ...(options.store ? { store: options.store } : {}),
      ...(options.stepsCoalesceMs !== undefined ? { stepsCoalesceMs: options.stepsCoalesceMs } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.ledger = new AskLedger(options.registry, {
      now: options.now,
      ...(options.store ? { store: options.store } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.#twins = new AskTwins(options.registry, this.#book, this.ledger);
    options.registry.on("settled", ({ ask, outcome }) => this.#endImplicit(ask.runId, outcome.kind));
  }

  /** The tasks shown in one session (`agent:<name>:<to>`), oldest first: what the session page shows. */
  tasksOf(sessionId: string): ReturnType<TaskBook["tasksOf"]> {
    return this.#book.tasksOf(sessionId);
  }

  /** After a restart: every task that was running gets its card back and takes calls again. */
  resume(): Promise<number> {
    return this.#book.resume();
  }

  async startTask(who: AgentPrincipal, input: StartTaskInput): Promise<{ task_id: string }> {
    this.#guard.mayReach(who, input.to);
    this.#mayOpen(who);
    this.#guard.mayShow(who, input.to, input.to);
    const task = await this.#open(who, input.to, input.title, false);
    this.#o.logger?.info({ agent: who.agent, taskId: task.run.id, to: input.to }, "agent task started");
    return { task_id: task.run.id };
  }

  async reportProgress(who: AgentPrincipal, input: ReportProgressInput): Promise<StepResult> {
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
    const count = task.run.steps.length; // this call's, whatever others add while it is written
    await this.#book.soon(task);
    return { task_id: task.run.id, steps: count };
  }

  /** Writes and shows every task whose latest steps are still held back (shutdown calls it). */
  flush(): Promise<void> {
    return this.#book.flush();
  }

  /** Registers the question on the card (after every check) and returns its ask id; `wait` gets the answer. */
  async ask(who: AgentPrincipal, input: AskUserQuestionsInput): Promise<string> {
    const parsed = parsedAsk(input);
    const existing = input.task_id !== undefined ? this.#running(who, input.task_id) : undefined;
    const { to, answerer } = askTarget(input, existing && { id: existing.run.id, to: existing.to });
    const { questions } = parsed;
    const twinKey = AskTwins.key(who, existing, to, answerer, questions);
    const twin = await this.#twins.find(who, existing, to, answerer, questions);
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
    const task = existing ?? this.#book.draft(who, to, title, true);
    const fresh = existing === undefined;
    const previousSender = task.run.senderId;
    // A group card's forms name whose answer they wait for: the answerer of its latest question.
    if (previousSender !== answerer) {
      if (fresh) task.run = { ...task.run, senderId: answerer };
      else await this.#book.update(task, { senderId: answerer });
    }
    // The form goes on the card as the card is now: with the steps held back (#soon) on it.
    if (!fresh && this.#book.held(task.run.id)) await this.#book.update(task, {});
    const timeoutMs = input.timeout_s !== undefined ? input.timeout_s * 1000 : this.#o.askTimeoutMs;
    let ask: PendingAsk;
    const registered = this.#o.registry.register({
      sessionId: task.run.sessionId,
      runId: task.run.id,
      answererId: answerer,
      questions,
      ...(parsed.metadata ? { metadata: parsed.metadata } : {}),
      surfaces: ["feishu"],
      ...(input.reason !== undefined ? { reason: input.reason } : {}),
      timeoutMs,
      // The agent reads a 拒绝回答 as status "declined" (ledger.ts): the person may say no.
      declinable: true,
    });
    const recorded = this.#twins.asking(twinKey);
    try {
      ask = await registered;
    } catch (error) {
      recorded(undefined);
      if (!fresh && previousSender !== answerer) await this.#book.update(task, { senderId: previousSender });
      throw error;
    }
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
    // Held at once, their rows written after: a twin resuming at the next await finds the ask and its task.
    const kept = Promise.all([fresh ? this.#book.adopt(task) : undefined, this.ledger.add(entry)]);
    recorded(ask.requestId);
    await kept;
    this.#o.logger?.info(
      { agent: who.agent, askId: ask.requestId, taskId: task.run.id, answerer, questions: questions.length },
      "agent asked",
    );
    // A new question card goes out once its question is registered, so its first send carries the form.
    if (fresh) this.#book.show(task);
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
      return await this.wait(who, await this.ask(who, input), options, hold);
    } finally {
      hold.release();
    }
  }

  /**
   * The ask's result now, or after waiting up to `waitMs` for it to settle. A call that has to wait takes a
   * place (wait-slots.ts) unless it holds one already; one that finds the ask settled needs none.
   */
  async wait(who: AgentPrincipal, askId: string, options: WaitOptions, held?: WaitHold): Promise<AskResult> {
    const entry = await this.#ask(who, askId);
    if (!(await this.ledger.settledOutcome(askId)) && !(await this.#o.registry.state(askId)))
      await this.ledger.markLost(askId);
    if (!(await this.ledger.settledOutcome(askId))) {
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

  async cancelQuestion(who: AgentPrincipal, askId: string): Promise<AskResult> {
    await this.#ask(who, askId);
    // While the database refuses the write the registry keeps trying; the agent hears the state now
    // (still pending) after a short wait instead of being held for the outage.
    const cancelled = this.#o.registry.cancel(askId, `cancelled by ${who.agent}`);
    await Promise.race([cancelled, new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_MS).unref?.())]);
    return this.ledger.result(askId);
  }

  async finishTask(who: AgentPrincipal, input: FinishTaskInput): Promise<FinishResult> {
    const task = this.#owned(who, input.task_id);
    if (task.run.status !== "running") return { task_id: task.run.id, status: task.run.status };
    await this.#finish(task, input.status, input.text);
    return { task_id: task.run.id, status: input.status };
  }

  // --------------------------------------------------------------------------------------------------

  async #open(who: AgentPrincipal, to: string, title: string, implicit: boolean): Promise<AgentTask> {
    const task = this.#book.draft(who, to, title, implicit);
    await this.#book.adopt(task);
    if (!implicit) this.#book.show(task);
    return task;
  }

  /** One agent keeps at most `maxLiveTasks` running: a new card past that is refused before it exists. */
  #mayOpen(who: AgentPrincipal): void {
    const max = this.#o.maxLiveTasks ?? MAX_LIVE_TASKS;
    const live = this.#book.liveTasks(who.agent);
    if (live >= max)
      throw new AppError(
        "RATE_LIMITED",
        `agent "${who.agent}" has ${live} tasks running, the most it may keep: finish_task one first`,
      );
  }

  #finish(task: AgentTask, status: "completed" | "failed" | "cancelled", text: string | undefined) {
    for (const ask of this.#o.registry.getPendingForSession(task.run.sessionId))
      if (ask.runId === task.run.id) void this.#o.registry.cancel(ask.requestId, `task ${status}`);
    return this.#book.update(task, {
      status,
      endedAt: this.#o.now(),
      ...(status === "failed" ? { error: text ?? "" } : text !== undefined ? { text } : {}),
    });
  }

  #endImplicit(taskId: string, outcome: string): void {
    const task = this.#book.get(taskId);
    if (!task?.implicit || task.run.status !== "running") return;
    const pending = this.#o.registry.getPendingForSession(task.run.sessionId).some((a) => a.runId === taskId);
    if (pending) return;
    const answered = outcome === "answered";
    const text = answered ? strings.agents.answered : strings.agents.notAnswered;
    this.#book.background(this.#finish(task, "completed", text));
  }

  #owned(who: AgentPrincipal, taskId: string): AgentTask {
    const task = this.#book.get(taskId);
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

  async #ask(who: AgentPrincipal, askId: string): Promise<AgentAsk> {
    const entry = await this.ledger.get(who, askId);
    if (!entry) throw new AppError("NOT_FOUND", `no question ${askId}`);
    return entry;
  }
}
