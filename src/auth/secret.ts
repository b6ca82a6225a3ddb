import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export const MIN_AUTH_SECRET_CHARS = 32;

/**
 * The secret that signs user tokens. Feishu mode requires AUTH_SECRET; local mode makes one on first start
 * and keeps it in DATA_DIR, so `npm run token` and a restarted bot agree on it.
 */
export function resolveAuthSecret(configured: string | undefined, dataDir: string): string {
  return configured ?? keptSecret(dataDir, "auth-secret");
}

/**
 * Local mode's webhook key (the emulator signs and encrypts with it): one per DATA_DIR, made on first start,
 * so nobody can forge the local bot's events by reading the source.
 */
export function localWebhookKey(dataDir: string): string {
  return keptSecret(dataDir, "webhook-key");
}

/** A random secret kept in `DATA_DIR/name` (owner-only); made on first use, read back on every later start. */
function keptSecret(dataDir: string, name: string): string {
  const file = path.join(dataDir, name);
  try {
    const existing = fs.readFileSync(file, "utf8").trim();
    // A file from before the 32-character minimum is replaced (local mode only: its tokens were local too).
    if (existing.length >= MIN_AUTH_SECRET_CHARS) return existing;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
