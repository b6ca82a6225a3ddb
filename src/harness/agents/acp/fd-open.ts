import { constants } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";

/**
 * Opening an agent's file so that the file used is the file checked (issue 24 items 5 and 6).
 *
 * Checking a path and then opening it can be raced: between the two, a component can be swapped for a
 * symlink to anywhere. So nothing here trusts a path after its check. A file is opened first and the
 * *descriptor* is judged: its real path (Linux: the kernel's `/proc/self/fd/N` link, which names the object
 * the descriptor holds, whatever happens to the path afterwards) must lie inside the root, and `fstat` on it
 * must say regular file. A new file is created through its parent directory's descriptor
 * (`/proc/self/fd/N/name`, Linux's `openat`), after that descriptor was judged the same way; missing
 * directories are made one at a time through their parent's descriptor, so a swap cannot redirect them.
 *
 * Every open is `O_NONBLOCK` (a named pipe with no writer would otherwise hold a thread-pool thread until
 * someone writes: four of them freeze every file operation of the bot) and `O_NOCTTY`; the final component
 * is opened `O_NOFOLLOW` where a symlink there could redirect a write.
 *
 * Without `/proc/self/fd` (macOS), the descriptor is compared with the checked path by device and inode: a
 * swap is then detected after the open and refused, but a raced write may have created an empty file.
 */

const { O_RDONLY, O_WRONLY, O_CREAT, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

/** Why an agent's file request was not served; each reason reaches the agent as an error it can act on. */
export type FileRefusal = "outside" | "not_found" | "not_regular" | "symlink" | "too_large" | "timeout";

export class WorkspaceFileError extends Error {
  readonly reason: FileRefusal;
  constructor(reason: FileRefusal, message: string) {
    super(message);
    this.name = "WorkspaceFileError";
    this.reason = reason;
  }
}

export interface OpenedFile {
  handle: FileHandle;
  /** Its real path, as the descriptor says. */
  real: string;
  size: number;
}

let procFd: boolean | undefined;
async function hasProcFd(): Promise<boolean> {
  if (procFd === undefined)
    procFd = await fs.stat("/proc/self/fd").then(
      (s) => s.isDirectory(),
      () => false,
    );
  return procFd;
}

const inside = (root: string, real: string) => real === root || real.startsWith(`${root}${path.sep}`);

/** The real path of what `handle` holds; `wanted` is the path it was opened by (for the fallback). */
async function realOf(handle: FileHandle, wanted: string): Promise<string | undefined> {
  if (await hasProcFd()) {
    const link = await fs.readlink(`/proc/self/fd/${handle.fd}`);
    // Unlinked since the open: nothing a path names any more.
    return link.endsWith(" (deleted)") ? undefined : link;
  }
  const real = await fs.realpath(wanted);
  const [held, named] = await Promise.all([handle.stat(), fs.stat(real)]);
  return held.dev === named.dev && held.ino === named.ino ? real : undefined;
}

/**
 * Opens `wanted` for reading; refuses anything but a regular file inside `root` (after every link). `shown`
 * is how errors name it (the path the agent sent).
 */
export async function openRegularForRead(root: string, wanted: string, shown = wanted): Promise<OpenedFile> {
  const handle = await openOrRefuse(wanted, O_RDONLY | O_NONBLOCK | O_NOCTTY, shown);
  try {
    const real = await realOf(handle, wanted);
    if (real === undefined || !inside(root, real)) throw outside(shown);
    const stat = await handle.stat();
    if (!stat.isFile()) throw notRegular(shown);
    return { handle, real, size: stat.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** AGENT_USER's ids: what the bot creates for the agent (as root) becomes the agent's, so it can change it. */
export interface FileOwner {
  uid: number;
  gid: number;
}

/**
 * Opens (creating it and its missing parents) `wanted` for writing, without truncating: the caller truncates
 * once it holds the right file. The directory is judged by its descriptor; the file is created in that
 * directory itself, and a symlink as the last component is refused rather than followed.
 */
export async function openRegularForWrite(
  root: string,
  wanted: string,
  shown = wanted,
  owner?: FileOwner,
): Promise<OpenedFile> {
  const dir = await openDirInside(root, path.dirname(wanted), shown, owner);
  try {
    const name = path.basename(wanted);
    const target = (await hasProcFd()) ? `/proc/self/fd/${dir.handle.fd}/${name}` : path.join(dir.real, name);
    const handle = await openOrRefuse(target, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, shown);
    try {
      const real = await realOf(handle, target);
      if (real === undefined || !inside(root, real)) throw outside(shown);
      const stat = await handle.stat();
      if (!stat.isFile()) throw notRegular(shown);
      // Through the descriptor: the file chowned is the file checked.
      if (owner && (stat.uid !== owner.uid || stat.gid !== owner.gid))
        await handle.chown(owner.uid, owner.gid);
      return { handle, real, size: stat.size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  } finally {
    await dir.handle.close();
  }
}

/** A directory inside `root`, opened and judged by its descriptor; missing ones are made beneath it. */
async function openDirInside(
  root: string,
  dir: string,
  shown: string,
  owner?: FileOwner,
): Promise<{ handle: FileHandle; real: string }> {
  let handle: FileHandle;
  try {
    handle = await fs.open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === "ENOTDIR") throw notRegular(shown);
    if (errorCode(error) !== "ENOENT") throw error;
    const parent = path.dirname(dir);
    if (parent === dir) throw error;
    // A dangling symlink here would have `mkdir` fail and tell nothing; refuse it plainly.
    if (await isLink(dir)) throw outside(shown);
    const above = await openDirInside(root, parent, shown, owner);
    try {
      const name = path.basename(dir);
      const viaParent = (await hasProcFd())
        ? `/proc/self/fd/${above.handle.fd}/${name}`
        : path.join(above.real, name);
      await fs.mkdir(viaParent).catch((e: unknown) => {
        if (errorCode(e) !== "EEXIST") throw e;
      });
      // NOFOLLOW: a link raced into the new name's place is refused, not entered.
      handle = await fs
        .open(viaParent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK)
        .catch((e: unknown) => {
          throw errorCode(e) === "ELOOP" || errorCode(e) === "ENOTDIR" ? outside(shown) : e;
        });
      if (owner) await handle.chown(owner.uid, owner.gid);
    } finally {
      await above.handle.close();
    }
  }
  try {
    const real = await realOf(handle, dir);
    if (real === undefined || !inside(root, real)) throw outside(shown);
    return { handle, real };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

async function openOrRefuse(target: string, flags: number, shown = target): Promise<FileHandle> {
  try {
    return await fs.open(target, flags, 0o644);
  } catch (error) {
    switch (errorCode(error)) {
      case "ENOENT":
      case "ENOTDIR": // a component on the way is a file
        throw new WorkspaceFileError("not_found", `No such file: ${shown}`);
      case "ELOOP":
        throw new WorkspaceFileError(
          "symlink",
          `Refused: ${shown} is a symbolic link; write to the file it names`,
        );
      case "ENXIO": // a named pipe opened for writing with nobody reading it
      case "EISDIR":
        throw notRegular(shown);
      default:
        throw error;
    }
  }
}

async function isLink(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    (s) => s.isSymbolicLink(),
    () => false,
  );
}

function outside(requested: string): WorkspaceFileError {
  return new WorkspaceFileError(
    "outside",
    `Refused: ${requested} is outside this chat's workspace; only files inside it can be read or written`,
  );
}

function notRegular(requested: string): WorkspaceFileError {
  return new WorkspaceFileError(
    "not_regular",
    `Refused: ${requested} is not a regular file (a directory, pipe, socket or device); only regular files can be read or written`,
  );
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}
