import fs from "node:fs";
import { ConfigError } from "../errors.ts";

/**
 * The HTTP server's connection cap, sized from the process's file-descriptor limit (issue 24 item 1). Node has
 * no getrlimit, so on Linux the soft RLIMIT_NOFILE is read from /proc/self/limits (what `ulimit -n` prints);
 * elsewhere it is unknown and the cap is the documented default. Every connection is a descriptor, and the
 * bot needs its own beyond them (SQLite and its journal, outbound HTTPS to Feishu and the model, agents'
 * child processes and their pipes, log files), so FD_RESERVE stays out of the cap's reach.
 */

export const FD_RESERVE = 256;
/** The cap when the limit is unknown (not Linux), and the most the limit alone ever makes it. */
export const DEFAULT_MAX_CONNECTIONS = 1_000;
const MAX_FROM_LIMIT = 4_096;
/** Below this the cap leaves too little room beside the per-address share and the webhook's reserve. */
const MIN_CONNECTIONS = 64;

/** The soft "Max open files" of a /proc/PID/limits text; undefined when absent, Infinity when unlimited. */
export function parseOpenFilesLimit(text: string): number | undefined {
  const match = /^Max open files\s+(\S+)/m.exec(text);
  if (!match?.[1]) return undefined;
  if (match[1] === "unlimited") return Number.POSITIVE_INFINITY;
  const value = Number(match[1]);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

/** This process's soft descriptor limit, or undefined where /proc/self/limits cannot be read. */
export function readOpenFilesLimit(read: () => string = () => fs.readFileSync("/proc/self/limits", "utf8")) {
  try {
    return parseOpenFilesLimit(read());
  } catch (error) {
    if (error instanceof Error && "code" in error) return undefined;
    throw error;
  }
}

export interface ConnectionCap {
  maxConnections: number;
  /** Why it is that number (logged at start-up). */
  source: "MAX_CONNECTIONS" | "fd limit" | "default";
  /** Said at start-up: a limit so low that the default cap is below what the bot should have. */
  warning?: string;
}

/**
 * MAX_CONNECTIONS when given (refused when the descriptor limit cannot hold it and the reserve), else half
 * of what the limit leaves after the reserve, at most 4,096; the default 1,000 when the limit is unknown.
 */
export function connectionCap(options: { configured?: number; fdLimit?: number }): ConnectionCap {
  const { configured, fdLimit } = options;
  if (configured !== undefined) {
    if (fdLimit !== undefined && configured + FD_RESERVE > fdLimit)
      throw new ConfigError(
        `Invalid configuration:\n  MAX_CONNECTIONS: ${configured} connections and the bot's own ${FD_RESERVE} ` +
          `descriptors need ${configured + FD_RESERVE}, but the open-files limit (ulimit -n) is ${fdLimit}; ` +
          `raise it (ulimit -n ${configured + FD_RESERVE}, LimitNOFILE= in systemd, --ulimit nofile= in docker) ` +
          `or lower MAX_CONNECTIONS`,
      );
    return { maxConnections: configured, source: "MAX_CONNECTIONS" };
  }
  if (fdLimit === undefined) return { maxConnections: DEFAULT_MAX_CONNECTIONS, source: "default" };
  const fromLimit = Math.min(MAX_FROM_LIMIT, Math.floor((fdLimit - FD_RESERVE) / 2));
  if (fromLimit >= MIN_CONNECTIONS) return { maxConnections: fromLimit, source: "fd limit" };
  return {
    maxConnections: MIN_CONNECTIONS,
    source: "fd limit",
    warning: `the open-files limit (ulimit -n) is ${fdLimit}: raise it to at least ${FD_RESERVE + 2 * MIN_CONNECTIONS * 4}`,
  };
}
