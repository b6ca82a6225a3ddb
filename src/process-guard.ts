import { describeError } from "./errors.ts";
import type { Logger } from "./logger.ts";

/**
 * Node 20 ends the process on an unhandled promise rejection. A long-lived bot must not: one bad frame from the
 * long connection (older SDKs reject inside their async 'message' listener; 1.74 catches most of it itself,
 * node-sdk #201) or one forgotten `.catch` would take every user's task down with it. The rejection is logged
 * with what it was, and the process keeps serving. Uncaught *exceptions* are left to Node: after one, the
 * process state is unknown, and a supervisor restart is the safer answer.
 */
export function installProcessGuard(logger: Logger): () => void {
  const onRejection = (reason: unknown) => {
    logger.error({ err: describeError(reason) }, "unhandled promise rejection; kept serving");
  };
  process.on("unhandledRejection", onRejection);
  return () => {
    process.off("unhandledRejection", onRejection);
  };
}
