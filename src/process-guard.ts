import { describeError } from "./errors.ts";
import type { Logger } from "./logger.ts";

/**
 * Node 20 ends the process on an unhandled promise rejection. A long-lived bot must not: one bad frame from the
 * long connection (older SDKs reject inside their async 'message' listener; 1.74 catches most of it itself,
 * node-sdk #201) or one forgotten `.catch` would take every user's task down with it. The rejection is logged
 * with what it was, and the process keeps serving. Uncaught *exceptions* are left to Node: after one, the
 * process state is unknown, and a supervisor restart is the safer answer. An EPIPE on stdout or stderr (whoever
 * read them has gone) is ignored the same way.
 */
export function installProcessGuard(logger: Logger): () => void {
  const onRejection = (reason: unknown) => {
    logger.error({ err: describeError(reason) }, "unhandled promise rejection; kept serving");
  };
  process.on("unhandledRejection", onRejection);
  // A reader of our stdout/stderr that went away (EPIPE) is no reason to crash: there is nobody to tell.
  const onStreamError = () => {};
  process.stdout.on("error", onStreamError);
  process.stderr.on("error", onStreamError);
  return () => {
    process.off("unhandledRejection", onRejection);
    process.stdout.off("error", onStreamError);
    process.stderr.off("error", onStreamError);
  };
}

/**
 * How the process ends on a signal or a fatal error: the graceful steps (`stop`) within `deadlineMs`, then
 * `exit`. Whatever happens, the DATA_DIR lock is released before exit, so a restart is never refused by a
 * process on its way out (issue 31):
 * - steps that do not finish by the deadline (a child that ignores us, a socket that never closes) → exit 1;
 * - a step that throws → exit 1 after the rest is skipped;
 * - a second signal while stopping (an operator's second Ctrl-C, a supervisor's second SIGTERM) → exit 1 now.
 * Logging here never decides anything: a logger that throws is ignored.
 */
export interface ShutdownOptions {
  stop: () => Promise<void>;
  release: () => void;
  exit: (code: number) => void;
  deadlineMs: number;
  logger: Logger;
  setTimer?: (run: () => void, ms: number) => { unref?: () => unknown };
}

export function createShutdown(options: ShutdownOptions): (reason: string, exitCode: number) => void {
  const setTimer = options.setTimer ?? ((run, ms) => setTimeout(run, ms));
  let stopping = false;
  let done = false;
  const log = (level: "info" | "warn" | "error", context: object, message: string) => {
    try {
      options.logger[level](context, message);
    } catch {
      // A log line is never worth a shutdown that does not end.
    }
  };
  const finish = (code: number) => {
    if (done) return;
    done = true;
    try {
      options.release();
    } finally {
      options.exit(code);
    }
  };
  return (reason, exitCode) => {
    if (stopping) {
      log("warn", { reason }, "second signal while shutting down: exiting now");
      finish(1);
      return;
    }
    stopping = true;
    log("info", { reason, deadlineMs: options.deadlineMs }, "shutting down");
    const timer = setTimer(() => {
      log("error", { reason, deadlineMs: options.deadlineMs }, "shutdown deadline passed: exiting");
      finish(1);
    }, options.deadlineMs);
    // The deadline must not be what keeps an otherwise finished process alive.
    timer.unref?.();
    options.stop().then(
      () => finish(exitCode),
      (error: unknown) => {
        log("error", { reason, err: describeError(error) }, "shutdown step failed: exiting");
        finish(1);
      },
    );
  };
}

/**
 * Calls `onGone` once the process that started us has gone (we were re-parented). `npm start` runs the bot as
 * npm → sh → node: a supervisor's SIGTERM reaches npm, npm passes it to `sh`, and `sh` dies of it without
 * passing it on, so the bot used to run on alone (issue 25). Watching the parent is the one way that works on
 * every OS and under every launcher (npm, pnpm, tsx, a shell script). A process started by the init process
 * (ppid 1 or 0) has nothing to watch for.
 */
export function watchParent(options: {
  onGone: (ppid: number) => void;
  intervalMs?: number;
  ppid?: () => number;
}): () => void {
  const ppid = options.ppid ?? (() => process.ppid);
  const first = ppid();
  if (first <= 1) return () => {};
  const timer = setInterval(() => {
    const now = ppid();
    if (now === first) return;
    clearInterval(timer);
    options.onGone(now);
  }, options.intervalMs ?? 1_000);
  timer.unref();
  return () => clearInterval(timer);
}
