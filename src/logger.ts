import fs from "node:fs";
import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger };

/** Paths that never reach a log line, whatever module logs them. */
export const REDACT_PATHS = [
  "appSecret",
  "app_secret",
  "authSecret",
  "token",
  "accessToken",
  "access_token",
  "tenant_access_token",
  "apiKey",
  "encryptKey",
  "authorization",
  "Authorization",
  "*.appSecret",
  "*.app_secret",
  "*.token",
  "*.apiKey",
  "*.authorization",
  "*.Authorization",
  "*.headers.authorization",
  "*.headers.Authorization",
  "headers.authorization",
  "headers.Authorization",
  "req.headers.authorization",
  "req.headers.cookie",
];

/**
 * JSON lines for machines; on a terminal (`pretty`), pino-pretty as pino's transport so a person running
 * `npm start` reads `12:00:01 INFO listening port=3000` instead of raw JSON. Redaction happens before either.
 *
 * Without a destination the JSON goes to stdout through `stdoutLines()`: logging must never block or crash the
 * process, shutdown included (issue 31: pino's default stdout stream flushes synchronously on exit and, once
 * the pipe's reader has gone, retries that write for ever — the bot hung on SIGTERM holding DATA_DIR).
 */
export function createLogger(options: {
  level: string;
  destination?: DestinationStream;
  pretty?: boolean;
}): Logger {
  const settings = {
    level: options.level,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: { service: "feishu-progress-bot" },
  };
  if (options.pretty && !options.destination) {
    return pino({
      ...settings,
      transport: {
        target: "pino-pretty",
        options: { colorize: true, translateTime: "SYS:HH:MM:ss", ignore: "pid,hostname,service" },
      },
    });
  }
  return pino(settings, options.destination ?? stdoutLines());
}

/**
 * stdout as a log destination that gives up instead of waiting: each line is one synchronous write (so there
 * is nothing to flush at exit); a full pipe (EAGAIN) drops that line rather than spin, and a pipe whose reader
 * has gone (EPIPE) or any other write error ends logging to stdout for good. The lines dropped are the price
 * of a reader that stopped reading; a process that hangs is not.
 */
export function stdoutLines(fd = 1, write: typeof fs.writeSync = fs.writeSync): DestinationStream {
  let broken = false;
  // A line cut by a full pipe is ended before the next one, so a reader never sees two lines glued together.
  let cut = false;
  return {
    write(line: string) {
      if (broken) return;
      let rest = Buffer.from(cut ? `\n${line}` : line);
      try {
        while (rest.length > 0) rest = rest.subarray(write(fd, rest));
        cut = false;
      } catch (error) {
        const code = error instanceof Error && "code" in error ? error.code : undefined;
        if (code === "EAGAIN") cut = rest.length > 0;
        else broken = true;
      }
    },
  };
}

/** Pretty output only for a person at a terminal; pipes, files and log collectors get JSON. */
export function wantsPrettyLogs(stream: { isTTY?: boolean }): boolean {
  return stream.isTTY === true;
}
