import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * What `npm run setup` writes and the bot reads: `DATA_DIR/feishu-app.env`, `KEY=value` lines (the same
 * format systemd's EnvironmentFile, docker's env_file and `node --env-file` read), mode 0600. Written in one
 * rename, so a reader sees the old file or the new one, never half of one.
 */

export const CREDENTIALS_FILE = "feishu-app.env";

/** The keys setup writes; the bot takes them from the file only when the environment sets no app itself. */
export const CREDENTIAL_KEYS = [
  "FEISHU_APP_ID",
  "FEISHU_APP_SECRET",
  "FEISHU_DOMAIN",
  "AUTH_SECRET",
] as const;

export type Credentials = Record<(typeof CREDENTIAL_KEYS)[number], string>;

export function credentialsPath(dataDir: string): string {
  return path.join(dataDir, CREDENTIALS_FILE);
}

/** `KEY=value` lines; `#` comments and blank lines skipped; anything else in a line is ignored. */
export function parseEnvFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*([A-Z][A-Z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match?.[1] || line.trimStart().startsWith("#")) continue;
    values[match[1]] = (match[2] ?? "").replace(/^"(.*)"$/, "$1");
  }
  return values;
}

/** The file's values, or undefined when there is none (any other read error is thrown: it is not "none"). */
export function readCredentialsFile(file: string): Record<string, string> | undefined {
  try {
    return parseEnvFile(fs.readFileSync(file, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * The environment the bot starts with: as given, plus what setup wrote under DATA_DIR when the environment
 * names no app (FEISHU_APP_ID unset). An app named in the environment wins whole: nothing is mixed.
 */
export function withSetupCredentials(
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  if (env.FEISHU_APP_ID?.trim()) return env;
  const saved = readCredentialsFile(credentialsPath(env.DATA_DIR?.trim() || "./data"));
  if (!saved?.FEISHU_APP_ID) return env;
  const merged = { ...env };
  for (const key of CREDENTIAL_KEYS) if (saved[key] && !merged[key]?.trim()) merged[key] = saved[key];
  return merged;
}

export function newAuthSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * `existing` with `values` written in: a line that sets one of the keys is replaced where it stands, the other
 * lines (comments, other settings) are kept as they are, and keys it did not have are appended. A `.env` that
 * setup is pointed at keeps everything else it says.
 */
export function mergeEnvText(existing: string, values: Record<string, string>, header: string): string {
  const pending = new Map(Object.entries(values));
  const lines = existing === "" ? [] : existing.replace(/\r?\n$/, "").split(/\r?\n/);
  const kept = lines.map((line) => {
    const key = /^\s*([A-Z][A-Z0-9_]*)\s*=/.exec(line)?.[1];
    if (key === undefined || !pending.has(key)) return line;
    const value = pending.get(key);
    pending.delete(key);
    return `${key}=${value}`;
  });
  const added = [...pending].map(([key, value]) => `${key}=${value}`);
  return `${[...(kept.length === 0 ? [`# ${header}`] : kept), ...added].join("\n")}\n`;
}

/**
 * Writes `values` into `file` atomically with mode 0600 (a temporary file beside it, fsync, rename), keeping
 * whatever else the file already said (mergeEnvText).
 */
export function writeEnvFileAtomic(file: string, values: Record<string, string>, header: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  let existing = "";
  try {
    existing = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const body = mergeEnvText(existing, values, header);
  const fd = fs.openSync(temporary, "w", 0o600);
  try {
    fs.writeSync(fd, body);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.chmodSync(temporary, 0o600);
    fs.renameSync(temporary, file);
  } catch (error) {
    fs.rmSync(temporary, { force: true });
    throw error;
  }
}
