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
  return pino(settings, options.destination);
}

/** Pretty output only for a person at a terminal; pipes, files and log collectors get JSON. */
export function wantsPrettyLogs(stream: { isTTY?: boolean }): boolean {
  return stream.isTTY === true;
}
