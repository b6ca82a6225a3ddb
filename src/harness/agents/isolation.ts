import fs from "node:fs";
import path from "node:path";
import { ConfigError } from "../../errors.ts";
import { type AgentUser, asAgentUser, parseAgentUser, prepareAgentUser } from "./agent-user.ts";
import type { SandboxSetting } from "./isolation-config.ts";

/**
 * Where a child process of the bot runs (issue 24 item 3). An ACP agent, its terminals and an MCP stdio
 * server are strangers: with the bot's user and a view of the whole machine, one could read the bot's
 * `/proc/PID/environ` (the Feishu app secret, AUTH_SECRET…), open `DATA_DIR/bot.sqlite`, or walk into other
 * chats' workspaces. In the bubblewrap sandbox it gets:
 * - its own PID namespace and `/proc` (`--unshare-pid --proc /proc`): no other process of the machine, the
 *   bot's included, is visible, so no environment but its own can be read;
 * - `DATA_DIR` (and the MCP_CONFIG file, which may hold tokens) replaced by an empty tmpfs, with only its own
 *   chat's workspace bound back writable: no database, no other chat's files;
 * - the rest of the file system as it is (its tools, its HOME), the network, and `--die-with-parent`.
 * Without bubblewrap a child runs as the bot's user with a scrubbed environment only, and the bot says so
 * at start-up. Node cannot make the bot non-dumpable (there is no prctl), so then a child of the same user
 * can still read the bot's initial environment: the README says what to do about it.
 */

export interface Isolation {
  readonly kind: "bwrap" | "none";
  /** AGENT_USER: the user the children run as (absent: the bot's own). */
  readonly user?: AgentUser;
  /** One sentence for the start-up log: what the children get, and what they do not. */
  readonly notice: string;
  /** The command line that starts `command` isolated, working in `cwd` with `writable` bound back. */
  wrap(launch: Launch): { command: string; args: string[] };
}

export interface Launch {
  command: string;
  args: readonly string[];
  cwd: string;
  /** Directories inside a hidden one that the child may use (its chat's workspace). */
  writable?: readonly string[];
}

export interface IsolationOptions {
  sandbox: SandboxSetting;
  /** Hidden from every child: DATA_DIR, the MCP_CONFIG file… (missing ones are skipped). */
  hidden: readonly string[];
  /** Where `bwrap` is looked for (the bot's PATH). */
  searchPath: string;
  /** Finds an executable on the search path (injected for tests). */
  which?: (name: string, searchPath: string) => string | undefined;
  /** AGENT_USER as written; with it `dataDir` and `workspacesDir` are checked (agent-user.ts). */
  agentUser?: string;
  dataDir?: string;
  workspacesDir?: string;
  /** Injected for tests: /etc/passwd's text and whether the bot runs as root. */
  passwd?: () => string;
  isRoot?: () => boolean;
}

export function resolveIsolation(options: IsolationOptions): Isolation {
  const base = resolveSandbox(options);
  if (!options.agentUser) return base;
  const user = parseAgentUser(
    options.agentUser,
    (options.passwd ?? (() => fs.readFileSync("/etc/passwd", "utf8")))(),
  );
  const setpriv = (options.which ?? whichOnPath)("setpriv", options.searchPath);
  if (!setpriv)
    throw new ConfigError(
      `AGENT_USER=${options.agentUser}: setpriv was not found on PATH (apt install util-linux)`,
    );
  prepareAgentUser(user, {
    dataDir: options.dataDir ?? options.hidden[0] ?? "",
    workspacesDir: options.workspacesDir ?? "",
    sandboxed: base.kind === "bwrap",
    isRoot: (options.isRoot ?? (() => process.getuid?.() === 0))(),
  });
  return {
    kind: base.kind,
    user,
    notice: `${base.notice}; as user ${user.name} (uid ${user.uid}), which cannot read this process's environment or DATA_DIR (0700)`,
    // bwrap (as root, no user namespace needed) sets up the mounts, then setpriv drops to the agent's user.
    wrap: (launch) => base.wrap({ ...launch, ...asAgentUser(setpriv, user, launch) }),
  };
}

function resolveSandbox(options: IsolationOptions): Isolation {
  if (options.sandbox === "off") return none("AGENT_SANDBOX=off");
  const bwrap = (options.which ?? whichOnPath)("bwrap", options.searchPath);
  if (bwrap) return bubblewrap(bwrap, options.hidden);
  if (options.sandbox === "bwrap")
    throw new ConfigError(
      "AGENT_SANDBOX=bwrap: bwrap was not found on PATH; install bubblewrap (apt install bubblewrap) or set AGENT_SANDBOX=auto",
    );
  return none("bwrap not found on PATH");
}

/** No sandbox: the child starts as asked (with the scrubbed environment its caller gives it). */
export const NO_ISOLATION: Isolation = none("not configured");

function none(why: string): Isolation {
  return {
    kind: "none",
    notice: `child processes run without a sandbox (${why}): as this user they can read DATA_DIR, every chat's workspace and this process's initial environment; install bubblewrap or run agents as another user (README, "What an agent can reach")`,
    wrap: ({ command, args }) => ({ command, args: [...args] }),
  };
}

function bubblewrap(bwrap: string, hidden: readonly string[]): Isolation {
  return {
    kind: "bwrap",
    notice: `child processes run in a bubblewrap sandbox (${bwrap}): own PID namespace, DATA_DIR hidden, only their chat's workspace writable`,
    wrap: (launch) => ({ command: bwrap, args: bwrapArgs(hidden, launch) }),
  };
}

/** bwrap's arguments, in order: later mounts sit on earlier ones (the workspace on the tmpfs over DATA_DIR). */
export function bwrapArgs(hidden: readonly string[], launch: Launch): string[] {
  const args = [
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--dev-bind",
    "/",
    "/",
    "--proc",
    "/proc",
  ];
  for (const entry of hidden) {
    const stat = statOf(entry);
    if (stat?.isDirectory()) args.push("--tmpfs", entry);
    else if (stat) args.push("--ro-bind", "/dev/null", entry);
  }
  for (const dir of launch.writable ?? []) args.push("--bind", dir, dir);
  args.push("--chdir", launch.cwd, "--", launch.command, ...launch.args);
  return args;
}

function statOf(entry: string): fs.Stats | undefined {
  try {
    return fs.statSync(entry);
  } catch {
    return undefined; // nothing there to hide
  }
}

function whichOnPath(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here; try the next
    }
  }
  return undefined;
}
