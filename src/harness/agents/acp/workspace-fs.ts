import fs from "node:fs/promises";
import path from "node:path";

/**
 * The agent's `fs/read_text_file` and `fs/write_text_file`, confined to the session's workspace. A path is
 * judged after resolving `..` and every symlink (of the file, or of its nearest existing parent for a new
 * file), so neither `../..` nor a link planted inside the workspace reaches a file outside it.
 */

export class OutsideWorkspaceError extends Error {
  constructor(requested: string) {
    super(
      `Refused: ${requested} is outside this chat's workspace; only files inside it can be read or written`,
    );
    this.name = "OutsideWorkspaceError";
  }
}

export interface WorkspaceFs {
  readonly root: string;
  read(file: string, range?: { line?: number | null; limit?: number | null }): Promise<string>;
  write(file: string, content: string): Promise<void>;
}

export async function openWorkspace(dir: string): Promise<WorkspaceFs> {
  await fs.mkdir(dir, { recursive: true });
  const root = await fs.realpath(dir);

  const inside = (real: string) => real === root || real.startsWith(`${root}${path.sep}`);

  /** The real path the request would touch; throws when it lies outside the workspace. */
  const confine = async (requested: string): Promise<string> => {
    // ACP paths are absolute; a relative one is taken against the workspace rather than our own cwd.
    const wanted = path.resolve(root, requested);
    const real = await realOrNearestParent(wanted);
    if (!inside(real)) throw new OutsideWorkspaceError(requested);
    return real;
  };

  return {
    root,
    async read(file, range) {
      const real = await confine(file);
      const text = await fs.readFile(real, "utf8");
      const line = range?.line ?? undefined;
      const limit = range?.limit ?? undefined;
      if (line === undefined && limit === undefined) return text;
      // ACP lines are 1-based.
      const lines = text.split("\n");
      const start = Math.max(0, (line ?? 1) - 1);
      return lines.slice(start, limit === undefined ? undefined : start + limit).join("\n");
    },
    async write(file, content) {
      const real = await confine(file);
      await fs.mkdir(path.dirname(real), { recursive: true });
      await fs.writeFile(real, content, "utf8");
    },
  };
}

/** realpath of the file, or (for a file still to be created) of its nearest existing parent plus the rest. */
async function realOrNearestParent(wanted: string): Promise<string> {
  let existing = wanted;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await fs.realpath(existing);
      return path.join(real, ...rest);
    } catch (error) {
      if (!isMissing(error)) throw error;
      // A dangling link would be followed by the write, to wherever it points: refuse it outright.
      if (await isLink(existing)) throw new OutsideWorkspaceError(wanted);
      const parent = path.dirname(existing);
      if (parent === existing) throw error;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
}

async function isLink(file: string): Promise<boolean> {
  try {
    return (await fs.lstat(file)).isSymbolicLink();
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}
