import fs from "node:fs";
import path from "node:path";
import { agentRevokeLines, agentTokenLines, parseAgentArgs } from "../agents-api/token-cli.ts";
import { AgentTokenStore } from "../agents-api/token-store.ts";
import { personalLink } from "../auth/link.ts";
import { resolveAuthSecret } from "../auth/secret.ts";
import { DEFAULT_TOKEN_TTL_MS, signToken } from "../auth/token.ts";
import { loadConfig } from "../config.ts";
import { readConfigFile } from "../config-file.ts";
import { describeError } from "../errors.ts";
import { withSetupCredentials } from "../feishu/setup/credentials-file.ts";
import { type OpenedStore, openStore, StoreOpenError } from "../store/open.ts";
import type { StoreSql } from "../store/sql.ts";
import { StoreTokenRevocations } from "../store/token-revocations.ts";

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

export async function tokenCli(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  now: number,
): Promise<TokenCliOutput> {
  // `--agent <name>`: an agent token for /mcp and /api (a different kind; agents-api/token-cli.ts).
  if (argv[0] === "--agent") {
    const agent = parseAgentArgs(argv.slice(1));
    if (!agent.ok) throw new TokenCliError(agent.error, 2);
    const config = loadConfig(env);
    const secret = secretFor(config);
    return withStore(config, async (store) => ({
      lines: await agentTokenLines(agent.value, secret, linkBase(config), now, new AgentTokenStore(store)),
    }));
  }
  const [userId, daysText] = argv;
  if (!userId) throw new TokenCliError("usage: npm run token -- <open_id> [days]", 2);
  const days = daysText === undefined ? undefined : Number(daysText);
  if (days !== undefined && !(Number.isFinite(days) && days > 0))
    throw new TokenCliError("days must be a positive number", 2);
  const config = loadConfig(env);
  const secret = secretFor(config);
  const ttlMs = days !== undefined ? days * 24 * 60 * 60 * 1000 : DEFAULT_TOKEN_TTL_MS;
  // The user's revocation generation, so a later --revoke ends these whatever this machine's clock says.
  const generation = await generationOf(config, userId);
  const gen = generation !== undefined ? { generation } : {};
  // The link opens once, within a day (auth/link.ts); the bare token below is the desktop client's.
  const link = personalLink({ publicUrl: linkBase(config), authSecret: secret, userId, now, ttlMs, ...gen });
  const expiresAt = now + ttlMs;
  const token = signToken(secret, userId, expiresAt, now, generation);
  const lines = [
    `Sign-in link for ${userId} (opens once, valid until ${new Date(link.expiresAt).toISOString()}):`,
    `  ${link.url}`,
  ];
  if (!config.publicUrlGiven)
    lines.push("  (PUBLIC_URL is not set, so this link only opens on the bot's own machine)");
  if (!config.publicUrlGiven && config.port === 0) lines.push(PORT_ZERO_NOTE);
  lines.push(`Token for desktop clients (valid until ${new Date(expiresAt).toISOString()}):`);
  const output: TokenCliOutput = { lines: [...lines, token] };
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
 * sockets at its next heartbeat. New tokens work again. Only an open_id: an agent's name or token id has
 * its own flags (`--revoke-agent`, `--revoke-token`), and anything else used to be "revoked" as a user no
 * token could name, while the agent's tokens kept working (issue 24 item 8).
 */
export async function revokeCli(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  now: number,
): Promise<{ lines: string[]; exitCode: number }> {
  const [flag, target] = argv;
  if (flag === "--revoke-agent" || flag === "--revoke-token")
    return withStore(loadConfig(env), (store) => agentRevokeLines(argv, new AgentTokenStore(store), now));
  if (!target || argv.length !== 2) throw new TokenCliError("usage: npm run token -- --revoke <open_id>", 2);
  if (!/^ou_[A-Za-z0-9_-]{1,64}$/.test(target))
    throw new TokenCliError(
      [
        `--revoke takes a person's open_id (ou_…), not "${target}".`,
        "  An agent's tokens: npm run token -- --revoke-agent <name>, or --revoke-token <token id>.",
      ].join("\n"),
      2,
    );
  return withStore(loadConfig(env), async (store) => {
    await new StoreTokenRevocations(store).revoke(target, now);
    return {
      lines: [`revoked every token of ${target} issued until ${new Date(now).toISOString()}`],
      exitCode: 0,
    };
  });
}

/**
 * The running bot's store, or a TokenCliError: a revocation or a token record written anywhere else would be a
 * success the bot never sees (the old `--revoke` made a fresh database where it was run). SQLite: the file in
 * DATA_DIR, which must exist. Postgres (DATABASE_URL): the bot's database, which must be reachable from here.
 */
async function withStore<T>(
  config: ReturnType<typeof loadConfig>,
  use: (store: StoreSql) => T | Promise<T>,
): Promise<T> {
  if (config.database.kind === "sqlite" && !fs.existsSync(config.database.file))
    throw new TokenCliError(
      [
        `Cannot find the bot's database ${path.resolve(config.database.file)}`,
        "  (the bot creates it on its first start). Run this with the server's DATA_DIR,",
        "  e.g. DATA_DIR=/srv/bot/data npm run token -- …",
      ].join("\n"),
      1,
    );
  let opened: OpenedStore;
  try {
    opened = await openStore(config);
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    throw new TokenCliError(
      `${error.message}\n  (npm run token uses the bot's own database: the bot's DATABASE_URL, reachable from here)`,
      1,
    );
  }
  try {
    return await use(opened.sql);
  } finally {
    await opened.close();
  }
}

/**
 * The user's revocation generation from the bot's store; undefined when DATA_DIR has no database yet (a
 * Postgres store is always there: it must be reached).
 */
async function generationOf(
  config: ReturnType<typeof loadConfig>,
  userId: string,
): Promise<number | undefined> {
  if (config.database.kind === "sqlite" && !fs.existsSync(config.database.file)) return undefined;
  return withStore(config, (store) => new StoreTokenRevocations(store).generation(userId));
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

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  try {
    // The same environment the bot starts with: what npm run setup wrote under DATA_DIR (AUTH_SECRET among it)
    // counts when the environment names no app, so a token signs with the secret the server uses.
    // The config file's `env` (DATA_DIR, AUTH_SECRET…) counts too, under the environment (config-file.ts).
    const file = readConfigFile(process.env);
    const env = { ...file?.env, ...(file?.apps ? process.env : withSetupCredentials(process.env)) };
    if (argv[0]?.startsWith("--revoke")) {
      const { lines, exitCode } = await revokeCli(argv, env, Date.now());
      (exitCode === 0 ? process.stdout : process.stderr).write(`${lines.join("\n")}\n`);
      process.exit(exitCode);
    }
    const { lines } = await tokenCli(argv, env, Date.now());
    process.stdout.write(`${lines.join("\n")}\n`);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : describeError(error)}\n`);
    process.exit(error instanceof TokenCliError ? error.exitCode : 1);
  }
}

// Run as a script (npm run token), not when a test imports tokenCli.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) void main();
