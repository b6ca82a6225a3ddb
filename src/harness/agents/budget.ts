import type { RunUsage } from "../../domain/usage.ts";
import { ModelError } from "../../errors.ts";
import { bilingual, strings } from "../../strings/index.ts";
import type { ChatModel } from "./chat-model.ts";

/**
 * One budget per run, shared by the session's agent and every sub-agent `delegate` starts under it, however
 * deep and however parallel. Without it one message fanned out to 13,369 model requests in 20 s: each turn
 * could delegate several times, each sub-agent had its own 25 steps and could delegate again.
 */
export interface RunBudgetLimits {
  /** Model requests (chat completions; a request's own retries are bounded by the model client). */
  modelRequests: number;
  /** Sub-agents started in the whole run, nested ones included. */
  subAgents: number;
  /** How deep delegation may nest: 2 lets a sub-agent delegate once more. */
  depth: number;
}

export const DEFAULT_RUN_BUDGET: RunBudgetLimits = { modelRequests: 100, subAgents: 10, depth: 2 };

export class RunBudget {
  readonly limits: RunBudgetLimits;
  #requests = 0;
  #subAgents = 0;
  /** Where each request's usage goes (the run's `reportUsage`), sub-agents' requests included. */
  onUsage: ((usage: RunUsage) => void) | undefined;

  constructor(limits: RunBudgetLimits) {
    this.limits = limits;
  }

  get used(): { modelRequests: number; subAgents: number } {
    return { modelRequests: this.#requests, subAgents: this.#subAgents };
  }

  /** Before every model request; throws (failing the run with a reason the card shows) once it is spent. */
  spendRequest(): void {
    if (this.#requests >= this.limits.modelRequests) {
      const limit = this.limits.modelRequests;
      throw new ModelError(strings.model.requestBudgetSpent(limit), {
        words: bilingual.model.requestBudgetSpent(limit),
      });
    }
    this.#requests += 1;
  }

  /** Before a sub-agent starts: undefined when it may, else why not (told to the model, shown on the step). */
  spendSubAgent(depth: number): string | undefined {
    if (depth > this.limits.depth) return strings.model.delegateTooDeep(this.limits.depth);
    if (this.#subAgents >= this.limits.subAgents)
      return strings.model.subAgentBudgetSpent(this.limits.subAgents);
    this.#subAgents += 1;
    return undefined;
  }
}

/** The budgets of the runs in flight, by run id: the agent opens one per run, `delegate` looks it up. */
export class RunBudgets {
  readonly #limits: RunBudgetLimits;
  readonly #byRun = new Map<string, RunBudget>();

  constructor(limits: Partial<RunBudgetLimits> = {}) {
    this.#limits = { ...DEFAULT_RUN_BUDGET, ...limits };
  }

  get limits(): RunBudgetLimits {
    return this.#limits;
  }

  /** The run's budget, made on first use; a resumed run starts a fresh one (the old count died with the process). */
  open(runId: string): RunBudget {
    let budget = this.#byRun.get(runId);
    if (!budget) {
      budget = new RunBudget(this.#limits);
      this.#byRun.set(runId, budget);
    }
    return budget;
  }

  /** The run's budget, or a one-off one for a caller outside any run this agent started. */
  forRun(runId: string): RunBudget {
    return this.#byRun.get(runId) ?? new RunBudget(this.#limits);
  }

  close(runId: string): void {
    this.#byRun.delete(runId);
  }

  get openCount(): number {
    return this.#byRun.size;
  }
}

/** The model, charging every request to `budget` first. */
export function budgeted(chat: ChatModel, budget: RunBudget): ChatModel {
  return {
    model: chat.model,
    async complete(request) {
      budget.spendRequest();
      const reply = await chat.complete(request);
      budget.onUsage?.(reply.usage);
      return reply;
    },
  };
}
