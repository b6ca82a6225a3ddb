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

export function createLogger(options: { level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: options.level,
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      base: { service: "feishu-progress-bot" },
    },
    options.destination,
  );
}
