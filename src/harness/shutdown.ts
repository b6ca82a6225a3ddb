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

/**
 * The abort reason of a run this instance lost to another (its lease was not renewed in time: issue 27). Like
 * a shutdown it leaves the run's asks pending, for the instance that adopts the run resumes at them; unlike
 * one, nothing of the run is written or shown from here any more.
 */
export class RunLostError extends ShutdownError {
  constructor(runId: string) {
    super();
    this.message = `Run ${runId} was given up here: another instance holds it now`;
    this.name = "RunLostError";
  }
}
