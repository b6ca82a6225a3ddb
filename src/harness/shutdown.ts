/**
 * The abort reason of a graceful stop. Whoever waits on the run tells it from a cancel by this class: a
 * cancel ends the run's asks, a shutdown leaves them pending so the next start resumes them (issue 16).
 */
export class ShutdownError extends Error {
  constructor() {
    super("Service shutting down");
    this.name = "ShutdownError";
  }
}

export function isShutdown(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof ShutdownError;
}
