import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";

/** Background work is tracked so nothing is lost silently and shutdown (and tests) can wait for it. */
export class Background {
  readonly #log: Logger;
  readonly #work = new Set<Promise<unknown>>();

  constructor(log: Logger) {
    this.#log = log;
  }

  track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) =>
      this.#log.error({ err: describeError(error) }, "feishu background work failed"),
    );
    this.#work.add(tracked);
    void tracked.finally(() => this.#work.delete(tracked));
  }

  /** Resolves once nothing tracked is running, work that tracked work started included. */
  async idle(): Promise<void> {
    while (this.#work.size > 0) await Promise.allSettled([...this.#work]);
  }
}
