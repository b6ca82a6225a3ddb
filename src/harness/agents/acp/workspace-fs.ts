import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { type FileOwner, openRegularForRead, openRegularForWrite, WorkspaceFileError } from "./fd-open.ts";

/**
 * The agent's `fs/read_text_file` and `fs/write_text_file`, confined to the session's workspace. Every door
 * assumes a stranger (issue 24 items 4–6):
 * - the file used is the file checked: it is opened first and judged by its descriptor (`fd-open.ts`), so
 *   neither `../..`, a planted symlink, nor a component swapped between check and use reaches outside;
 * - regular files only, opened non-blocking: a named pipe, socket or device is refused at once, never waited on;
 * - a read returns at most `maxReadBytes`: a whole-file read of a bigger file is refused with its size and
 *   how to read it in parts, and `line`/`limit` are served by streaming the file, never by loading it;
 * - a write carries at most `maxWriteBytes`;
 * - every request ends within `timeoutMs`, with an error the agent can read.
 */

export { WorkspaceFileError } from "./fd-open.ts";

export interface WorkspaceFs {
  readonly root: string;
  read(file: string, range?: { line?: number | null; limit?: number | null }): Promise<string>;
  write(file: string, content: string): Promise<void>;
}

export interface WorkspaceLimits {
  /** Most bytes one read returns (the reply to the agent is bounded by it). */
  maxReadBytes?: number;
  /** Most bytes one write may carry. */
  maxWriteBytes?: number;
  /** Every file request ends by then. */
  timeoutMs?: number;
  now?: () => number;
  /** AGENT_USER: files and directories written for the agent become its user's (fd-open.ts). */
  owner?: FileOwner;
}

export const WORKSPACE_LIMITS = {
  maxReadBytes: 2 * 1024 * 1024,
  maxWriteBytes: 16 * 1024 * 1024,
  timeoutMs: 10_000,
} as const;

const CHUNK_BYTES = 64 * 1024;

export async function openWorkspace(dir: string, limits: WorkspaceLimits = {}): Promise<WorkspaceFs> {
  await fs.mkdir(dir, { recursive: true });
  if (limits.owner) await fs.chown(dir, limits.owner.uid, limits.owner.gid);
  const root = await fs.realpath(dir);
  const maxRead = limits.maxReadBytes ?? WORKSPACE_LIMITS.maxReadBytes;
  const maxWrite = limits.maxWriteBytes ?? WORKSPACE_LIMITS.maxWriteBytes;
  const timeoutMs = limits.timeoutMs ?? WORKSPACE_LIMITS.timeoutMs;
  const now = limits.now ?? Date.now;
  // ACP paths are absolute; a relative one is taken against the workspace rather than our own cwd.
  const resolve = (requested: string) => path.resolve(root, requested);

  return {
    root,
    read(file, range) {
      const shown = shortPath(file);
      return bounded(timeoutMs, shown, async () => {
        const opened = await openRegularForRead(root, resolve(file), shown);
        try {
          const line = range?.line ?? undefined;
          const limit = range?.limit ?? undefined;
          if (line === undefined && limit === undefined && opened.size > maxRead)
            throw new WorkspaceFileError(
              "too_large",
              `${shown} is ${opened.size} bytes; one read returns at most ${maxRead} bytes: read it in parts with line and limit (e.g. line 1, limit 1000)`,
            );
          const deadline = now() + timeoutMs;
          return await readLines(opened.handle, {
            start: Math.max(1, line ?? 1),
            limit,
            maxBytes: maxRead,
            overDeadline: () => now() > deadline,
            shown,
          });
        } finally {
          await opened.handle.close();
        }
      });
    },
    write(file, content) {
      const shown = shortPath(file);
      return bounded(timeoutMs, shown, async () => {
        const bytes = Buffer.from(content, "utf8");
        if (bytes.length > maxWrite)
          throw new WorkspaceFileError(
            "too_large",
            `Refused: the content for ${shown} is ${bytes.length} bytes; one write carries at most ${maxWrite} bytes`,
          );
        const opened = await openRegularForWrite(root, resolve(file), shown, limits.owner);
        try {
          // Truncated only now, once the descriptor is known to be the workspace's own regular file.
          await opened.handle.truncate(0);
          await opened.handle.write(bytes, 0, bytes.length, 0);
        } finally {
          await opened.handle.close();
        }
      });
    },
  };
}

interface LineWindow {
  /** 1-based (ACP). */
  start: number;
  limit: number | undefined;
  maxBytes: number;
  overDeadline: () => boolean;
  shown: string;
}

/**
 * Lines `start`…`start + limit - 1` joined by "\n" (the whole rest when `limit` is absent), read chunk by
 * chunk: lines before the window are counted, never kept, so memory stays at one chunk plus the answer.
 */
async function readLines(handle: FileHandle, w: LineWindow): Promise<string> {
  const decoder = new StringDecoder("utf8");
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let lineNo = 1;
  let taken = 0;
  let out = "";
  let outBytes = 0;
  const keep = (piece: string) => {
    outBytes += Buffer.byteLength(piece);
    if (outBytes > w.maxBytes)
      throw new WorkspaceFileError(
        "too_large",
        `Lines from ${w.start} of ${w.shown} come to more than ${w.maxBytes} bytes, the most one read returns: ask for fewer lines (a smaller limit)`,
      );
    out += piece;
  };
  for (;;) {
    if (w.overDeadline()) throw timedOut(w.shown);
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
    const text = bytesRead === 0 ? decoder.end() : decoder.write(buffer.subarray(0, bytesRead));
    let from = 0;
    for (;;) {
      const newline = text.indexOf("\n", from);
      if (lineNo >= w.start) keep(newline === -1 ? text.slice(from) : text.slice(from, newline));
      if (newline === -1) break;
      if (lineNo >= w.start) {
        taken += 1;
        if (w.limit !== undefined && taken >= w.limit) return out;
        keep("\n");
      }
      lineNo += 1;
      from = newline + 1;
    }
    if (bytesRead === 0) return out;
  }
}

/** The request, or a timeout error after `timeoutMs`, whichever comes first. */
async function bounded<T>(timeoutMs: number, shown: string, work: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(shown)), timeoutMs);
  });
  try {
    return await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}

function timedOut(shown: string): WorkspaceFileError {
  return new WorkspaceFileError(
    "timeout",
    `The request for ${shown} did not finish in time and was given up`,
  );
}

/** An agent's path as shown back to it: bounded, whatever it sent. */
function shortPath(requested: string): string {
  return requested.length > 300 ? `${requested.slice(0, 299)}…` : requested;
}
