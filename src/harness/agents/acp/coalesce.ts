import type { AgentContext, ReportedStep } from "../agent.ts";

/**
 * Coalesces an ACP agent's `session/update` stream before it reaches the run (issue 24 item 10). An agent may
 * send thousands of updates a second; each one used to save the whole run to SQLite and emit `run_updated`
 * (a snapshot, the hub's frames, the card's render), which stalled the event loop for every chat. Here the
 * latest text and the latest state of each step are kept, and handed on together at most once per
 * `intervalMs` (and at once by `flush`, e.g. before a permission form and at the end of the turn): one
 * write and one update per burst, whatever the agent's rate. The card's publisher coalesces again to the
 * platform's rate; this bound is about our own process.
 *
 * Steps keep the order in which their keys first appeared (a Map's order), so the card lists them as the
 * agent announced them; within one burst only a step's last state counts (removed, or its latest fields).
 */

export type Sink = Pick<AgentContext, "reportStep" | "reportText" | "reportBatch">;

export interface Timers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const REAL_TIMERS: Timers = {
  setTimeout: (run, ms) => {
    const handle = setTimeout(run, ms);
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const COALESCE_INTERVAL_MS = 100;

export class CoalescingSink implements Pick<AgentContext, "reportStep" | "reportText"> {
  readonly #out: Sink;
  readonly #intervalMs: number;
  readonly #timers: Timers;
  readonly #steps = new Map<string, ReportedStep | null>();
  #text: string | undefined;
  #timer: unknown;

  constructor(out: Sink, options: { intervalMs?: number; timers?: Timers } = {}) {
    this.#out = out;
    this.#intervalMs = options.intervalMs ?? COALESCE_INTERVAL_MS;
    this.#timers = options.timers ?? REAL_TIMERS;
  }

  reportText(text: string): void {
    this.#text = text;
    this.#schedule();
  }

  reportStep(key: string, step: ReportedStep | null): void {
    this.#steps.set(key, step);
    this.#schedule();
  }

  /** Hands on whatever is pending now. */
  flush(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    const text = this.#text;
    const steps = [...this.#steps];
    this.#text = undefined;
    this.#steps.clear();
    if (text === undefined && steps.length === 0) return;
    if (this.#out.reportBatch) {
      this.#out.reportBatch({ ...(text !== undefined ? { text } : {}), steps });
      return;
    }
    for (const [key, step] of steps) this.#out.reportStep(key, step);
    if (text !== undefined) this.#out.reportText(text);
  }

  /** Drops the timer; pending changes are flushed first. */
  close(): void {
    this.flush();
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, this.#intervalMs);
  }
}
