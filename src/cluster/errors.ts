import { AppError } from "../errors.ts";

/**
 * The errors the cluster primitives throw on purpose. Callers switch on the class (or `code`), never on a
 * Postgres message: a stale fence is a decision (the caller lost its lease and must stop), an unreachable
 * database is a condition (the caller says 503 and tries again later; nothing is lost, nothing restarts).
 */

/** A write carried a fence that is no longer the lease's current one: another instance holds it now. */
export class StaleFenceError extends AppError {
  readonly lease: string;
  readonly fence: number;

  constructor(lease: string, fence: number, holder: string) {
    super(
      "CONFLICT",
      `The write under lease "${lease}" was refused: fence ${fence} held by "${holder}" is no longer current (the lease expired or another instance took it).`,
    );
    this.name = "StaleFenceError";
    this.lease = lease;
    this.fence = fence;
  }
}

/** A claimed work row was finished by an instance whose claim had lapsed and been given to another. */
export class StaleClaimError extends AppError {
  readonly workId: string;

  constructor(workId: string, claimedBy: string) {
    super(
      "CONFLICT",
      `Work ${workId} was not marked done: the claim of "${claimedBy}" lapsed and the row was claimed again.`,
    );
    this.name = "StaleClaimError";
    this.workId = workId;
  }
}

/** Postgres could not be reached (refused, restarting, connection dropped, timed out). Retry later. */
export class DatabaseUnavailableError extends AppError {
  constructor(cause: unknown) {
    super(
      "INTERNAL",
      `Postgres is unreachable (${describeCause(cause)}); the request can be retried once it is back.`,
      { cause, status: 503 },
    );
    this.name = "DatabaseUnavailableError";
  }
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === "string" && code !== "" ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}

/**
 * SQLSTATE classes and Node error codes that mean "the server is not there", as opposed to a bad query:
 * 08 connection exception, 57P01-57P03 admin shutdown / crash shutdown / cannot connect now (a restart),
 * 53300 too many connections; the socket-level errors; pg's own messages for a dropped or timed-out connection.
 */
const UNAVAILABLE_CODES = new Set([
  "57P01",
  "57P02",
  "57P03",
  "53300",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
const UNAVAILABLE_MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Client has encountered a connection error/i,
  /the database system is (starting up|shutting down)/i,
];

export function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_CODES.has(code) || code.startsWith("08"))) return true;
  if (error instanceof AggregateError) return error.errors.some(isUnavailable);
  return UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(error.message));
}

/** Rethrows an outage as DatabaseUnavailableError and anything else unchanged. */
export function asClusterError(error: unknown): unknown {
  return isUnavailable(error) && !(error instanceof DatabaseUnavailableError)
    ? new DatabaseUnavailableError(error)
    : error;
}
