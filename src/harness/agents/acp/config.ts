import { z } from "zod";
import { parseJson } from "../../../util/json.ts";

/**
 * The `ACP_*` variables of `AGENT=acp`, parsed with the rest of the environment by `loadConfig`.
 * Kept here (zod only, no I/O) so config.ts takes one line per hook and the ACP rules live in one place.
 */

export interface AcpConfig {
  /** The agent program, e.g. `npx` or `codex-acp`. */
  command: string;
  args: string[];
  /**
   * The child's whole environment: a few harmless variables of ours (PATH, HOME, locale) plus `ACP_ENV`.
   * Never the bot's own environment, which holds the Feishu app secret and AUTH_SECRET.
   */
  env: Record<string, string>;
  /** `terminal/*` requests are served only when on (ACP_TERMINAL=on). */
  terminal: boolean;
  /** Silence (no session/update, no request) after which a prompt counts as hung; paused while asking. */
  idleTimeoutMs: number;
  /** A chat's agent process is stopped after this long without a task (the next message starts it again). */
  keepAliveMs?: number;
}

/** Passed through from the bot's environment so the agent can find its tools and home; nothing secret. */
const PASSED_THROUGH = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SHELL", "TERM"] as const;

const stringArray = z.array(z.string());
const stringRecord = z.record(z.string(), z.string());

const argsSchema = z
  .string()
  .trim()
  .transform((text, ctx) => {
    if (text === "") return [];
    // A JSON array keeps arguments with spaces intact; plain text splits on whitespace.
    if (!text.startsWith("[")) return text.split(/\s+/);
    const parsed = stringArray.safeParse(parseJson(text));
    if (parsed.success) return parsed.data;
    ctx.addIssue({
      code: "custom",
      message: 'ACP_ARGS must be words or a JSON array of strings, e.g. ["--x"]',
    });
    return z.NEVER;
  });

const envVarsSchema = z
  .string()
  .trim()
  .transform((text, ctx) => {
    if (text === "") return {};
    const parsed = stringRecord.safeParse(parseJson(text));
    if (parsed.success) return parsed.data;
    ctx.addIssue({
      code: "custom",
      message: 'ACP_ENV must be a JSON object of strings, e.g. {"KEY":"value"}',
    });
    return z.NEVER;
  });

export const acpEnvShape = {
  ACP_COMMAND: z
    .string()
    .trim()
    .transform((value) => (value === "" ? undefined : value))
    .optional(),
  ACP_ARGS: argsSchema.default([]),
  ACP_ENV: envVarsSchema.default({}),
  ACP_TERMINAL: z
    .enum(["on", "off", "true", "false", "1", "0"], { message: "ACP_TERMINAL accepts on or off" })
    .transform((value) => value === "on" || value === "true" || value === "1")
    .default(false),
  ACP_IDLE_TIMEOUT_MS: z
    .string()
    .trim()
    .regex(/^\d+$/, "ACP_IDLE_TIMEOUT_MS must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1_000, "ACP_IDLE_TIMEOUT_MS must be at least 1000").max(86_400_000))
    .default(300_000),
  ACP_KEEP_ALIVE_MS: z
    .string()
    .trim()
    .regex(/^\d+$/, "ACP_KEEP_ALIVE_MS must be a whole number")
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(1_000, "ACP_KEEP_ALIVE_MS must be at least 1000")
        .max(7 * 86_400_000),
    )
    .default(1_800_000),
};

type AcpEnv = {
  ACP_COMMAND?: string | undefined;
  ACP_ARGS: string[];
  ACP_ENV: Record<string, string>;
  ACP_TERMINAL: boolean;
  ACP_IDLE_TIMEOUT_MS: number;
  ACP_KEEP_ALIVE_MS: number;
};

export function acpConfigFrom(e: AcpEnv, env: Record<string, string | undefined>): AcpConfig {
  const base: Record<string, string> = {};
  for (const key of PASSED_THROUGH) {
    const value = env[key];
    if (value !== undefined) base[key] = value;
  }
  return {
    command: e.ACP_COMMAND ?? "",
    args: e.ACP_ARGS,
    env: { ...base, ...e.ACP_ENV },
    terminal: e.ACP_TERMINAL,
    idleTimeoutMs: e.ACP_IDLE_TIMEOUT_MS,
    keepAliveMs: e.ACP_KEEP_ALIVE_MS,
  };
}
