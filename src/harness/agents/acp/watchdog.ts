/**
 * Notices a hung agent: `fired` resolves after `idleMs` without a `kick()`. Paused while the agent waits for
 * the person (a permission form may sit for minutes; that silence is ours, not the agent's).
 */
export class Watchdog {
  readonly #idleMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #paused = 0;
  #stopped = false;
  #fire!: () => void;
  readonly fired: Promise<void>;

  constructor(idleMs: number) {
    this.#idleMs = idleMs;
    this.fired = new Promise((resolve) => {
      this.#fire = resolve;
    });
    this.#arm();
  }

  kick(): void {
    this.#arm();
  }

  pause(): void {
    this.#paused += 1;
    clearTimeout(this.#timer);
  }

  resume(): void {
    this.#paused = Math.max(0, this.#paused - 1);
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #arm(): void {
    clearTimeout(this.#timer);
    if (this.#paused > 0 || this.#stopped) return;
    this.#timer = setTimeout(() => this.#fire(), this.#idleMs);
    this.#timer.unref?.();
  }
}
