import type { ToolContext } from "../../dispatcher.ts";

/**
 * The tool calls running on one MCP server. An `elicitation/create` arrives without saying which call it
 * belongs to (stdio carries no related-request id), so it goes to the latest running call: that call's
 * session, run and sender decide who is asked (never a guess between two people: see `current`). The
 * call's timeout pauses while the person answers.
 */
export interface RunningCall {
  ctx: ToolContext;
  /** Aborts on the run's cancel or on the timeout. */
  signal: AbortSignal;
  readonly timedOut: boolean;
  /** Stops the timeout clock until the returned function is called. */
  pause(): () => void;
  end(): void;
}

export class CallTracker {
  readonly #running: RunningCall[] = [];

  /**
   * The call an elicitation belongs to. When calls of different sessions or senders run on this server at
   * once, nothing: asking the wrong person would show one chat's question (and its answer) to another.
   */
  current(): RunningCall | undefined {
    const latest = this.#running.at(-1);
    if (!latest) return undefined;
    const same = this.#running.every(
      (call) => call.ctx.session.id === latest.ctx.session.id && call.ctx.senderId === latest.ctx.senderId,
    );
    return same ? latest : undefined;
  }

  start(ctx: ToolContext, timeoutMs: number): RunningCall {
    const controller = new AbortController();
    const onAbort = () => controller.abort(ctx.signal.reason);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    let timedOut = false;
    let paused = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new Error(`timed out after ${timeoutMs} ms`));
      }, timeoutMs);
    };
    arm();
    const call: RunningCall = {
      ctx,
      signal: controller.signal,
      get timedOut() {
        return timedOut;
      },
      pause: () => {
        paused += 1;
        clearTimeout(timer);
        let resumed = false;
        return () => {
          if (resumed) return;
          resumed = true;
          paused -= 1;
          // The clock starts over: the server gets its full time again after the person has answered.
          if (paused === 0 && !controller.signal.aborted && this.#running.includes(call)) arm();
        };
      },
      end: () => {
        clearTimeout(timer);
        ctx.signal.removeEventListener("abort", onAbort);
        const index = this.#running.indexOf(call);
        if (index >= 0) this.#running.splice(index, 1);
      },
    };
    this.#running.push(call);
    return call;
  }
}
