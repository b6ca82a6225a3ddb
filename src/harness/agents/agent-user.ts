import fs from "node:fs";
import path from "node:path";
import { ConfigError } from "../../errors.ts";

/**
 * AGENT_USER (issue 24 item 3): the bot's children run as another user. The kernel lets only the same user (or
 * root) read `/proc/PID/environ`, which keeps the secrets the bot was started with, and a `0700` DATA_DIR is
 * closed to everyone else, so such a child reads neither, with or without bubblewrap. The switch is util-linux's
 * `setpriv` (groups cleared, so the bot's supplementary groups do not come along); it needs the bot to run as
 * root, as in a container.
 */
export interface AgentUser {
  /** As the operator wrote it, for messages. */
  name: string;
  uid: number;
  gid: number;
}

/** `name`, `uid` or `uid:gid`; a name is looked up in `passwdText` (the contents of /etc/passwd). */
export function parseAgentUser(setting: string, passwdText: string): AgentUser {
  const numeric = /^(\d+)(?::(\d+))?$/.exec(setting);
  if (numeric) {
    const uid = Number(numeric[1]);
    const fromPasswd = passwdEntries(passwdText).find((entry) => entry.uid === uid);
    const gid = numeric[2] !== undefined ? Number(numeric[2]) : fromPasswd?.gid;
    if (gid === undefined)
      throw new ConfigError(
        `AGENT_USER=${setting}: uid ${uid} is not in /etc/passwd; give its group too (uid:gid)`,
      );
    return refuseRoot({ name: setting, uid, gid });
  }
  const entry = passwdEntries(passwdText).find((e) => e.name === setting);
  if (!entry)
    throw new ConfigError(`AGENT_USER=${setting}: no such user in /etc/passwd (useradd it, or give uid:gid)`);
  return refuseRoot({ name: setting, uid: entry.uid, gid: entry.gid });
}

function refuseRoot(user: AgentUser): AgentUser {
  if (user.uid === 0) throw new ConfigError(`AGENT_USER=${user.name} is root: name an unprivileged user`);
  return user;
}

function passwdEntries(text: string): { name: string; uid: number; gid: number }[] {
  return text.split("\n").flatMap((line) => {
    const [name, , uid, gid] = line.split(":");
    if (!name || uid === undefined || gid === undefined || !/^\d+$/.test(uid) || !/^\d+$/.test(gid))
      return [];
    return [{ name, uid: Number(uid), gid: Number(gid) }];
  });
}

/**
 * What must hold before any child starts as `user`: the bot is root (setpriv cannot switch otherwise), DATA_DIR
 * is closed to others (made `0700` here: the bot owns it), and, without a sandbox to bind it back, the
 * workspaces are outside DATA_DIR, where the agent's user can reach them.
 */
export function prepareAgentUser(
  user: AgentUser,
  where: { dataDir: string; workspacesDir: string; sandboxed: boolean; isRoot: boolean },
): void {
  if (!where.isRoot)
    throw new ConfigError(
      `AGENT_USER=${user.name}: the bot must run as root to start its children as another user`,
    );
  if (!where.sandboxed && isInside(where.workspacesDir, where.dataDir))
    throw new ConfigError(
      `AGENT_USER=${user.name} without bubblewrap: set WORKSPACES_DIR outside DATA_DIR (${where.dataDir} is closed to that user)`,
    );
  fs.mkdirSync(where.dataDir, { recursive: true });
  fs.chmodSync(where.dataDir, 0o700);
}

/** `setpriv`'s command line for `command` as `user`, and the child's writable directories made its own. */
export function asAgentUser(
  setpriv: string,
  user: AgentUser,
  launch: { command: string; args: readonly string[]; writable?: readonly string[] },
): { command: string; args: string[] } {
  for (const dir of launch.writable ?? []) {
    fs.mkdirSync(dir, { recursive: true });
    fs.chownSync(dir, user.uid, user.gid);
  }
  return {
    command: setpriv,
    args: [
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      "--clear-groups",
      "--",
      launch.command,
      ...launch.args,
    ],
  };
}

/** Whether `child` is `parent` or lies beneath it (both absolute). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}
