import { resolveAuthSecret } from "../auth/secret.ts";
import { DEFAULT_TOKEN_TTL_MS, signToken } from "../auth/token.ts";
import { loadConfig } from "../config.ts";
import { describeError } from "../errors.ts";

/** `npm run token -- <open_id> [days]` prints a WebSocket/user token signed with AUTH_SECRET. */
function main(): void {
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

try {
  main();
} catch (error) {
  process.stderr.write(`${describeError(error)}\n`);
  process.exit(1);
}
