/**
 * Runs `task` every `ms` until stopped, never two at once (a slow run makes the next one wait for the next
 * tick, not pile up). The timer is unref'd: it never keeps the process alive on its own. A failure goes to
 * `onError` and the next tick runs again.
 */
export interface Repeating {
  /** Stops the ticks and waits for a run under way. */
  stop(): Promise<void>;
}

export function every(
  ms: number,
  task: () => Promise<unknown>,
  onError: (error: unknown) => void,
): Repeating {
  let running: Promise<void> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = task()
      .then(
        () => undefined,
        (error: unknown) => onError(error),
      )
      .finally(() => {
        running = undefined;
      });
  }, ms);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
