import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import type { Card } from "../../../src/cards/model.ts";
import type { Emulator } from "../../../src/local/emulator/index.ts";
import { type MainProcess, startMain } from "../../helpers/main-process.ts";
import { AUTH_SECRET, ENCRYPT_KEY } from "./stack.ts";

/**
 * The real entry point (`npm start` = `tsx src/main.ts`) as a child process in feishu webhook mode against an
 * emulator the test owns, on a DATA_DIR the test owns, so it can be killed with SIGKILL and started again.
 */

export interface BotProcess extends MainProcess {
  hookUrl: string;
}

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "fpb-crash-"));
}

export interface BotOptions {
  emulator: Emulator;
  dataDir: string;
  /** Where the bot sends Open API calls (default the emulator). */
  apiUrl?: string;
  env?: Record<string, string>;
  /** Extra node flags (e.g. --expose-gc). */
  nodeArgs?: string[];
  /** Modules imported after tsx and before the entry point (e.g. a probe that reports memory). */
  preload?: string[];
}

/** Starts the bot on PORT=0 and reads back the port it bound (helpers/main-process.ts). */
export async function startBot(options: BotOptions): Promise<BotProcess> {
  const bot = await startMain({
    ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
    ...(options.preload ? { preload: options.preload } : {}),
    env: {
      LOG_LEVEL: "info",
      DATA_DIR: options.dataDir,
      FEISHU_APP_ID: options.emulator.appId,
      FEISHU_APP_SECRET: options.emulator.appSecret,
      FEISHU_DOMAIN: options.apiUrl ?? options.emulator.url,
      FEISHU_TRANSPORT: "webhook",
      FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
      AUTH_SECRET,
      DEMO_STEP_MS: "20",
      CARD_PATCH_INTERVAL_MS: "200",
      FEISHU_ASK_PING: "off",
      ...options.env,
    },
  });
  return { ...bot, hookUrl: `http://127.0.0.1:${bot.port}/feishu/events` };
}

/** What SQLite says about the file: `ok` from integrity_check, no foreign-key violations. */
export function checkDatabase(dataDir: string): { integrity: string; foreignKeyViolations: number } {
  const db = new Database(path.join(dataDir, "bot.sqlite"), { fileMustExist: true });
  try {
    const integrity = db.pragma("integrity_check", { simple: true }) as string;
    const violations = db.pragma("foreign_key_check") as unknown[];
    return { integrity, foreignKeyViolations: violations.length };
  } finally {
    db.close();
  }
}

/** Reads the bot's SQLite file while the bot may be running (WAL allows a second reader). */
export function query<T>(dataDir: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dataDir, "bot.sqlite"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** The interactive replies the bot posted to a user's message, oldest first. */
export function cardsReplyingTo(emulator: Emulator, messageId: string): string[] {
  return emulator.messages
    .listMessages()
    .filter((m) => m.parentId === messageId && m.msgType === "interactive" && m.senderType === "app")
    .map((m) => m.messageId);
}

export function cardOf(emulator: Emulator, messageId: string): Card {
  return JSON.parse(emulator.messages.getMessage(messageId)?.content ?? "{}") as Card;
}
