import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import type { Logger } from "../../../logger.ts";

/**
 * Which ACP session belongs to which chat session, kept in one small JSON file under DATA_DIR so that after a
 * restart the agent can pick the conversation up with `session/load`. Written whole through a rename, so a
 * crash mid-write leaves the previous file; an unreadable file is logged and starts empty (the next message
 * then opens a new ACP session: the chat goes on, only the agent's memory of it is lost).
 */

const fileSchema = z.record(z.string(), z.string());

export interface SessionIdStore {
  get(chatSessionId: string): string | undefined;
  set(chatSessionId: string, acpSessionId: string): void;
  delete(chatSessionId: string): void;
}

export function fileSessionIds(file: string, logger: Logger): SessionIdStore {
  const ids = new Map<string, string>(Object.entries(readFile(file, logger)));
  const save = () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, JSON.stringify(Object.fromEntries(ids), null, 2));
    fs.renameSync(temp, file);
  };
  return {
    get: (chatSessionId) => ids.get(chatSessionId),
    set(chatSessionId, acpSessionId) {
      if (ids.get(chatSessionId) === acpSessionId) return;
      ids.set(chatSessionId, acpSessionId);
      save();
    },
    delete(chatSessionId) {
      if (ids.delete(chatSessionId)) save();
    },
  };
}

export function memorySessionIds(): SessionIdStore {
  const ids = new Map<string, string>();
  return {
    get: (id) => ids.get(id),
    set: (id, acp) => void ids.set(id, acp),
    delete: (id) => void ids.delete(id),
  };
}

function readFile(file: string, logger: Logger): Record<string, string> {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return {};
    logger.warn({ err: error, file }, "acp session ids unreadable; starting without them");
    return {};
  }
  try {
    const parsed = fileSchema.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
    logger.warn(
      { file, issues: parsed.error.issues.length },
      "acp session ids malformed; starting without them",
    );
  } catch (error) {
    logger.warn({ err: error, file }, "acp session ids not JSON; starting without them");
  }
  return {};
}
