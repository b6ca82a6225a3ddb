import { z } from "zod";

/**
 * `AGENT_SANDBOX`: where the bot's child processes (ACP agents, their terminals, MCP stdio servers) run.
 * Parsed with the rest of the environment by `loadConfig` (zod only, no I/O; isolation.ts acts on it).
 * - `auto` (default): in a bubblewrap sandbox when `bwrap` is on PATH, else as the bot's own user, said at
 *   start-up;
 * - `bwrap`: always in the sandbox; the bot refuses to start without `bwrap`;
 * - `off`: as the bot's own user, with a scrubbed environment only.
 */
export type SandboxSetting = "auto" | "bwrap" | "off";

export const isolationEnvShape = {
  AGENT_SANDBOX: z
    .enum(["auto", "bwrap", "off"], { message: "AGENT_SANDBOX accepts auto, bwrap or off" })
    .default("auto"),
  /**
   * Another user the children run as (a name from /etc/passwd, or `uid` / `uid:gid`), through util-linux's
   * `setpriv`; the bot must run as root. Such a child cannot read the bot's `/proc/PID/environ` or a `0700`
   * `DATA_DIR` even without the sandbox.
   */
  AGENT_USER: z.string().trim().min(1).optional(),
  /** Where chats' workspaces live (default `DATA_DIR/workspaces`); outside DATA_DIR for AGENT_USER without bwrap. */
  WORKSPACES_DIR: z.string().trim().min(1).optional(),
};

/**
 * The variables that carry the bot's own secrets. `main.ts` deletes them from its environment once the
 * config holds them, so nothing started later can inherit them by accident. (The kernel's copy of the initial
 * environment, `/proc/PID/environ`, cannot be changed from Node: a child as the same user can still read it
 * unless it runs in the sandbox or as another user. README, "What an agent can reach".)
 */
export const SECRET_ENV_KEYS = [
  "FEISHU_APP_SECRET",
  "FEISHU_ENCRYPT_KEY",
  "FEISHU_VERIFICATION_TOKEN",
  "AUTH_SECRET",
  "OPENAI_API_KEY",
  "ACP_ENV",
] as const;
