import path from "node:path";
import { resolveAuthSecret } from "../auth/secret.ts";
import { DEFAULT_TOKEN_TTL_MS, signToken } from "../auth/token.ts";
import { loadConfig } from "../config.ts";
import { describeError } from "../errors.ts";
import { openDatabase } from "../store/db.ts";
import { SqliteTokenRevocations } from "../store/token-revocations.ts";

/** `npm run token -- <open_id> [days]` prints a WebSocket/user token signed with AUTH_SECRET. */
function main(): void {
  if (process.argv[2] === "--revoke") return revoke(process.argv[3]);
  const [userId, daysText] = process.argv.slice(2);
  if (!userId) {
    process.stderr.write("usage: npm run token -- <open_id> [days]\n");
    process.exit(2);
  }
  const days = daysText === undefined ? undefined : Number(daysText);
  if (days !== undefined && !(Number.isFinite(days) && days > 0)) {
    process.stderr.write("days must be a positive number\n");
    process.exit(2);
  }
  const config = loadConfig(process.env);
  const secret = resolveAuthSecret(config.authSecret, config.dataDir);
  const ttlMs = days === undefined ? DEFAULT_TOKEN_TTL_MS : days * 24 * 60 * 60 * 1000;
  process.stdout.write(`${signToken(secret, userId, Date.now() + ttlMs)}\n`);
}

/**
 * `npm run token -- --revoke <open_id>`: every token of that user issued until now stops working — page
 * cookies, links and desktop tokens alike; a running bot refuses them at once and closes their open
 * sockets at its next heartbeat. New tokens work again.
 */
function revoke(userId: string | undefined): void {
  if (!userId) {
    process.stderr.write("usage: npm run token -- --revoke <open_id>\n");
    process.exit(2);
  }
  const config = loadConfig(process.env);
  const db = openDatabase(path.join(config.dataDir, "bot.sqlite"));
  try {
    new SqliteTokenRevocations(db).revoke(userId, Date.now());
  } finally {
    db.close();
  }
  process.stdout.write(`revoked every token of ${userId} issued until ${new Date().toISOString()}\n`);
}

try {
  main();
} catch (error) {
  process.stderr.write(`${describeError(error)}\n`);
  process.exit(1);
}
