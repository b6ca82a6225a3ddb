/**
 * One error hierarchy with stable codes. Every class sets `name` so logs and tests can tell them apart.
 * `code` is what callers switch on; `message` is for people.
 */
export type AppErrorCode =
  | "CONFIG_INVALID"
  | "INVALID_INPUT"
  | "NOT_FOUND"
  | "FORBIDDEN"
  | "UNAUTHORIZED"
  | "CONFLICT"
  | "RATE_LIMITED"
  | "TOO_LARGE"
  | "MODEL_FAILED"
  | "INTERNAL";

export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly status: number;

  constructor(code: AppErrorCode, message: string, options: { cause?: unknown; status?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.status = options.status ?? statusFor(code);
  }
}

export class ConfigError extends AppError {
  constructor(message: string) {
    super("CONFIG_INVALID", message);
    this.name = "ConfigError";
  }
}

/** A model request that failed for good (after any retries); `message` says what to check. */
export class ModelError extends AppError {
  /** The model service's HTTP status, when it answered at all. */
  readonly upstreamStatus: number | undefined;
  /** `message` in every language, by locale code, when it is the bot's words: a shared card shows each its own. */
  readonly words: Readonly<Record<string, string>> | undefined;

  constructor(
    message: string,
    options: { cause?: unknown; upstreamStatus?: number; words?: Readonly<Record<string, string>> } = {},
  ) {
    super("MODEL_FAILED", message, { cause: options.cause, status: 502 });
    this.name = "ModelError";
    this.upstreamStatus = options.upstreamStatus;
    this.words = options.words;
  }
}

function statusFor(code: AppErrorCode): number {
  switch (code) {
    case "INVALID_INPUT":
      return 400;
    case "UNAUTHORIZED":
      return 401;
    case "FORBIDDEN":
      return 403;
    case "NOT_FOUND":
      return 404;
    case "CONFLICT":
      return 409;
    case "TOO_LARGE":
      return 413;
    case "RATE_LIMITED":
      return 429;
    default:
      return 500;
  }
}

/** A readable one-line description of anything thrown. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
