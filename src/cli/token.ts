import fs from "node:fs";
import path from "node:path";
import { agentTokenLines, parseAgentArgs } from "../agents-api/token-cli.ts";
import { personalLink } from "../auth/link.ts";
import { resolveAuthSecret } from "../auth/secret.ts";
import { loadConfig } from "../config.ts";
import { describeError } from "../errors.ts";
import { openDatabase } from "../store/db.ts";
import { SqliteTokenRevocations } from "../store/token-revocations.ts";

/**
 * `npm run token -- <open_id> [days]`: a sign-in link for the session pages and, on the last line, the bare
 * token (for WebSocket clients, and for scripts that read the last line).
 *
 * The token is only worth anything if it is signed with the secret the running server uses: AUTH_SECRET, or
 * in local mode the `auth-secret` file the server made in its DATA_DIR. Run from elsewhere (another
 * directory, no DATA_DIR), quietly making a fresh secret would print a token the server refuses, so this
 * refuses instead and says what to set.
 */

/** The file name resolveAuthSecret keeps the local-mode secret under, in DATA_DIR. */
const SECRET_FILE = "auth-secret";

export class TokenCliError extends Error {
  override name = "TokenCliError";
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export interface TokenCliOutput {
  /** What goes to stdout, the token last. */
  lines: string[];
}

export function tokenCli(argv: readonly string[], env: Record<string, string | undefined>, now: number) {
  // `--agent <name>`: an agent token for /mcp and /api (a different kind; agents-api/token-cli.ts).
  if (argv[0] === "--agent") {
    const agent = parseAgentArgs(argv.slice(1));
    if (!agent.ok) throw new TokenCliError(agent.error, 2);
    const config = loadConfig(env);
    return { lines: agentTokenLines(agent.value, secretFor(config), linkBase(config), now) };
  }
  const [userId, daysText] = argv;
  if (!userId) throw new TokenCliError("usage: npm run token -- <open_id> [days]", 2);
  const days = daysText === undefined ? undefined : Number(daysText);
  if (days !== undefined && !(Number.isFinite(days) && days > 0))
    throw new TokenCliError("days must be a positive number", 2);
  const config = loadConfig(env);
  const secret = secretFor(config);
  const { url, token, expiresAt } = personalLink({
    publicUrl: linkBase(config),
    authSecret: secret,
    userId,
    now,
    ...(days !== undefined ? { ttlMs: days * 24 * 60 * 60 * 1000 } : {}),
  });
  const lines = [
    `Sign-in link for ${userId} (valid until ${new Date(expiresAt).toISOString()}):`,
    `  ${url}`,
  ];
  if (!config.publicUrlGiven)
    lines.push("  (PUBLIC_URL is not set, so this link only opens on the bot's own machine)");
  if (!config.publicUrlGiven && config.port === 0) lines.push(PORT_ZERO_NOTE);
  const output: TokenCliOutput = { lines: [...lines, "Token:", token] };
  return output;
}

const PORT_ZERO_NOTE =
  "  (PORT=0: the bot picks its port when it starts; put in the port its `listening` line names)";

/**
 * Where the session pages are served: PUBLIC_URL, or http://localhost:$PORT. With PORT=0 this process
 * cannot know the port the running bot got, so the link names a placeholder instead of a dead `:0`.
 */
function linkBase(config: ReturnType<typeof loadConfig>): string {
  if (!config.publicUrlGiven && config.port === 0) return "http://localhost:<port>";
  return config.publicUrl;
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

/** The secret the running server signs with, or a TokenCliError saying what to set. */
function secretFor(config: ReturnType<typeof loadConfig>): string {
  const secretFile = path.resolve(config.dataDir, SECRET_FILE);
  if (!config.authSecret && !fs.existsSync(secretFile)) {
    throw new TokenCliError(
      [
        "Cannot find the secret the server signs tokens with:",
        "  AUTH_SECRET is not set, and there is no",
        `  ${secretFile}`,
        "  (the server writes it on its first start in local mode).",
        "Run this with the server's settings: the same DATA_DIR (e.g. DATA_DIR=/srv/bot/data npm run token -- <open_id>),",
        "or the same AUTH_SECRET. A token signed with any other secret would be refused.",
      ].join("\n"),
      1,
    );
  }
  // The file exists (or AUTH_SECRET is set), so this reads it and never makes a new one.
  return resolveAuthSecret(config.authSecret, config.dataDir);
}

function main(): void {
  if (process.argv[2] === "--revoke") {
    try {
      return revoke(process.argv[3]);
    } catch (error) {
      process.stderr.write(`${describeError(error)}\n`);
      process.exit(1);
    }
  }
  try {
    const { lines } = tokenCli(process.argv.slice(2), process.env, Date.now());
    process.stdout.write(`${lines.join("\n")}\n`);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : describeError(error)}\n`);
    process.exit(error instanceof TokenCliError ? error.exitCode : 1);
  }
}

// Run as a script (npm run token), not when a test imports tokenCli.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) main();
