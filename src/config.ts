import path from "node:path";
import { type AgentSettings, agentSettingsFrom } from "./config-agent.ts";
import { type AppSettings, loadApps } from "./config-apps.ts";
import { envSchema, type LOG_LEVELS } from "./config-env.ts";
import type { ConfigFile } from "./config-file.ts";
import { ConfigError } from "./errors.ts";
import { isInside } from "./harness/agents/agent-user.ts";
import type { SandboxSetting } from "./harness/agents/isolation-config.ts";
import type { Locale } from "./strings/index.ts";

/**
 * The environment the service reads, validated once at start-up (DESIGN §10).
 * Only `main.ts` (and the CLI entry points) hand the real environment to `loadConfig`.
 */

/** How Feishu events reach the bot; the webhook cannot run without the key its bodies are encrypted with. */
export type FeishuTransportSettings =
  | { transport: "ws"; encryptKey?: string; verificationToken?: string }
  | { transport: "webhook"; encryptKey: string; verificationToken?: string };

/** What every Feishu app (a real tenant's or the local emulator's) is run with. */
interface FeishuAppBehaviour {
  domain: string;
  /** Send a short @-mention message when a form appears on a card (a PATCH notifies nobody). */
  askPing: boolean;
  /** After a card callback's answer went out, its card's next PATCH waits this long (docs/long-connection.md). */
  callbackSettleMs: number;
  /** FEISHU_REPLY_IN_THREAD: a task from a plain group message is answered in a new thread under it. */
  replyInThread: boolean;
  /** FEISHU_CARD_TRANSPORT: progress cards by IM PATCH, or as CardKit entities (feishu/cardkit/). */
  cardTransport: "im" | "cardkit";
}

/**
 * A Feishu app the bot can connect to: credentials present by type, so the Feishu adapters need not check
 * them again (loadConfig refuses feishu mode without them; local mode gets them from the emulator).
 */
export type FeishuSettings = FeishuAppBehaviour & {
  appId: string;
  appSecret: string;
  /** Who may start tasks with this app (absent: everyone who can reach the bot): open ids, or group chat ids. */
  allow?: AllowList;
  /** The app's own agent (config file `apps[i].agent`); absent, its runs get `Config.agent`. */
  agent?: AgentSettings;
} & FeishuTransportSettings;

/** An app's allow-list: a message is taken when its sender is listed or it was sent in a listed group. */
export interface AllowList {
  users: string[];
  chats: string[];
}

/** Local mode before the emulator starts: no credentials yet (local/index.ts fills them in). */
export type LocalFeishuSettings = FeishuAppBehaviour & {
  transport: "ws" | "webhook";
  verificationToken?: string;
  /** EMULATOR_DLP_AUDIT: the emulated tenant refuses plain e-mail addresses and phone numbers (230028). */
  dlpAudit: boolean;
};

/** The mode decides what the Feishu section holds (a discriminated union on `mode`). */
export type Config = ConfigBase &
  (
    | {
        mode: "feishu";
        /** The first app: FEISHU_APP_ID's, or the config file's first (setup uses it; doctor and the start-up checks take every app). */
        feishu: FeishuSettings;
        /** Every app the process serves, the first first (one app without a config file's `apps`). */
        apps: FeishuSettings[];
      }
    | { mode: "local"; feishu: LocalFeishuSettings }
  );

/** A config whose Feishu app is known: feishu mode as loaded, or local mode once the emulator runs. */
export type RunnableConfig = ConfigBase & {
  mode: Config["mode"];
  feishu: FeishuSettings;
  apps?: FeishuSettings[];
};

/**
 * Where the bot's store lives: the SQLite file in DATA_DIR (one process), or the Postgres database DATABASE_URL
 * names (several instances on one database; store/open.ts opens either). `url` holds the password: describe it
 * with store/open.ts `describeDatabase`, never log it.
 */
export type DatabaseSettings =
  | { kind: "sqlite"; file: string }
  /** `leaseMs`: INSTANCE_LEASE_MS, how long an instance holds its runs and the long connection unrenewed. */
  | { kind: "postgres"; url: string; leaseMs: number };

export interface ConfigBase {
  port: number;
  /** The interface to listen on: 127.0.0.1 in local mode unless HOST says otherwise; all interfaces in feishu mode. */
  host: string | undefined;
  dataDir: string;
  /** DATABASE_URL's Postgres, else `DATA_DIR/bot.sqlite`. */
  database: DatabaseSettings;
  /** WORKSPACES_DIR: the chats' workspaces (default `DATA_DIR/workspaces`). */
  workspacesDir: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** The bot's language: replies, summaries and each card's `content`; cards carry every locale besides. */
  locale: Locale;
  /** AGENT and its variables: the agent of every run whose app has none of its own (config-agent.ts). */
  agent: AgentSettings;
  askTimeoutMs: number;
  /** Reminder before an ask's deadline, 延长's total bound, the deadline's zone (issue 16). */
  asks: { remindBeforeMs: number; extendMaxMs: number; timeZone: string };
  cardPatchIntervalMs: number;
  /** CARD_FOOTER: an ended card says `用时 · ↑in ↓out · model` where the agent reported its usage. */
  cardFooter: boolean;
  /** PUBLIC_URL, else http://localhost:PORT; with PORT=0 read the live one from `PublicAddress` (public-url.ts). */
  publicUrl: string;
  /** PUBLIC_URL was set; else the public URL follows the port actually bound. */
  publicUrlGiven: boolean;
  /**
   * Whether cards carry the 会话详情 link. Not in feishu mode without PUBLIC_URL: the default
   * http://localhost:PORT is a dead link on a real tenant's phones and laptops.
   */
  detailsLinks: boolean;
  /** Absent only in local mode, where main.ts generates and keeps one under DATA_DIR. */
  authSecret?: string;
  /** How long a browser sign-in (the session page's cookie) lasts. */
  signInTtlMs: number;
  /** Messages that may wait behind a chat's running task; the next one is refused with a reply. */
  queueMax: number;
  /** MAX_CONNECTIONS (absent: sized from the descriptor limit, web/fd-limit.ts) and the share of one address. */
  connections: { max?: number; perAddress: number };
  /**
   * AGENT_SANDBOX, what child processes must not see (DATA_DIR, the MCP_CONFIG file, absolute), and the PATH
   * `bwrap` is looked up on (harness/agents/isolation.ts).
   */
  /**
   * Environment variables that held secrets beyond SECRET_ENV_KEYS (the config file's, DATABASE_URL with its
   * password): removed from the process like the rest.
   */
  secretEnvNames: string[];
  isolation: {
    sandbox: SandboxSetting;
    hidden: string[];
    searchPath: string;
    /** AGENT_USER as written (resolved against /etc/passwd by isolation.ts). */
    agentUser?: string;
    dataDir: string;
    workspacesDir: string;
  };
}

/**
 * With Postgres, instances share the store and every sign-in link, token and cookie one signs must hold on all:
 * a secret each made for itself in its DATA_DIR (auth/secret.ts) would refuse the others'. Local mode with
 * DATABASE_URL is one process for trying it out, and keeps the generated secret.
 */
const AUTH_SECRET_SHARED =
  "  AUTH_SECRET: required in feishu mode, and with DATABASE_URL set it to the same value on every instance (at least 32 characters, e.g. openssl rand -base64 32): an instance with a secret of its own would refuse the others' sign-in links and tokens";

const WEBHOOK_NEEDS_KEY =
  "  FEISHU_ENCRYPT_KEY: required with FEISHU_TRANSPORT=webhook (bodies are decrypted and signed with it)";

/**
 * Parse the environment (over the config file's `env` and beside its `apps`, config-file.ts). A bad value throws
 * one ConfigError naming every bad variable and what it accepts.
 */
export function loadConfig(given: Record<string, string | undefined>, file?: ConfigFile): Config {
  // The environment overrides the file, variable by variable.
  const env: Record<string, string | undefined> = { ...file?.env };
  for (const [key, value] of Object.entries(given)) if (value !== undefined) env[key] = value;
  const parsed = envSchema.safeParse(pickKnown(env));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? "environment");
      return `  ${variable}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const problems: string[] = [];
  const mode = e.FEISHU_APP_ID || file?.apps ? "feishu" : "local";
  const loaded = loadApps(e, env, file?.apps);
  if (mode === "feishu") {
    problems.push(...loaded.problems);
    if (!e.AUTH_SECRET)
      problems.push(
        e.DATABASE_URL
          ? AUTH_SECRET_SHARED
          : "  AUTH_SECRET: required in feishu mode (at least 32 characters)",
      );
  }
  const agent = agentSettingsFrom(e, env);
  problems.push(...agent.problems);
  // MCP servers are the process's, offered to every OpenAI agent: the environment's or an app's.
  const openaiApp = mode === "feishu" && loaded.apps.some((app) => app.agent?.kind === "openai");
  if (e.MCP_CONFIG && e.AGENT !== "openai" && !openaiApp)
    problems.push("  MCP_CONFIG: MCP tools are offered to the OpenAI agent; set AGENT=openai");
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.join("\n")}`);

  const base: ConfigBase = {
    port: e.PORT,
    // Local mode's console lets anyone act as any user: loopback only, unless the operator asks for more.
    host: e.HOST ?? (mode === "local" ? "127.0.0.1" : undefined),
    dataDir: e.DATA_DIR,
    database: e.DATABASE_URL
      ? { kind: "postgres", url: e.DATABASE_URL, leaseMs: e.INSTANCE_LEASE_MS }
      : { kind: "sqlite", file: path.join(e.DATA_DIR, "bot.sqlite") },
    workspacesDir: e.WORKSPACES_DIR ?? path.join(e.DATA_DIR, "workspaces"),
    logLevel: e.LOG_LEVEL,
    locale: e.BOT_LOCALE ?? (isLarkDomain(e.FEISHU_DOMAIN) ? "en_us" : "zh_cn"),
    agent: agent.settings,
    askTimeoutMs: e.ASK_TIMEOUT_MS,
    asks: {
      remindBeforeMs: e.ASK_REMIND_BEFORE_MS,
      extendMaxMs: e.ASK_EXTEND_MAX_MS,
      timeZone: e.ASK_TIME_ZONE,
    },
    cardPatchIntervalMs: e.CARD_PATCH_INTERVAL_MS,
    cardFooter: e.CARD_FOOTER,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, ""),
    publicUrlGiven: e.PUBLIC_URL !== undefined,
    detailsLinks: mode === "local" || e.PUBLIC_URL !== undefined,
    authSecret: e.AUTH_SECRET,
    signInTtlMs: e.SIGNIN_TTL_HOURS * 60 * 60 * 1000,
    queueMax: e.QUEUE_MAX,
    connections: {
      ...(e.MAX_CONNECTIONS !== undefined ? { max: e.MAX_CONNECTIONS } : {}),
      perAddress: e.MAX_CONNECTIONS_PER_ADDRESS,
    },
    secretEnvNames: [...loaded.secretEnvNames, ...(e.DATABASE_URL ? ["DATABASE_URL"] : [])],
    isolation: {
      sandbox: e.AGENT_SANDBOX,
      hidden: [
        path.resolve(e.DATA_DIR),
        // Workspaces moved out of DATA_DIR are hidden as a whole too; each child gets its own bound back.
        ...(e.WORKSPACES_DIR && !isInside(path.resolve(e.WORKSPACES_DIR), path.resolve(e.DATA_DIR))
          ? [path.resolve(e.WORKSPACES_DIR)]
          : []),
        ...(e.MCP_CONFIG ? [path.resolve(e.MCP_CONFIG)] : []),
        // The config file may hold the apps' secrets in place (config-file.ts).
        ...(file?.path ? [path.resolve(file.path)] : []),
      ],
      searchPath: env.PATH ?? "",
      ...(e.AGENT_USER ? { agentUser: e.AGENT_USER } : {}),
      dataDir: path.resolve(e.DATA_DIR),
      workspacesDir: path.resolve(e.WORKSPACES_DIR ?? path.join(e.DATA_DIR, "workspaces")),
    },
  };
  const behaviour: FeishuAppBehaviour = {
    domain: e.FEISHU_DOMAIN,
    askPing: e.FEISHU_ASK_PING,
    callbackSettleMs: e.FEISHU_CALLBACK_SETTLE_MS,
    replyInThread: e.FEISHU_REPLY_IN_THREAD,
    cardTransport: e.FEISHU_CARD_TRANSPORT,
  };
  const verification = e.FEISHU_VERIFICATION_TOKEN ? { verificationToken: e.FEISHU_VERIFICATION_TOKEN } : {};
  const apps = loaded.apps.map((app) => settingsOf(app, behaviour));
  const [first] = apps;
  // The checks above made an app present in feishu mode; the narrowing says so to the type checker once.
  if (mode === "local" || first === undefined)
    return {
      ...base,
      mode: "local",
      feishu: {
        ...behaviour,
        transport: e.FEISHU_TRANSPORT,
        ...verification,
        dlpAudit: e.EMULATOR_DLP_AUDIT,
      },
    };
  return { ...base, mode: "feishu", feishu: first, apps };
}

/** One app's settings: its own credentials, transport, domain and allow-list, the process's behaviour. */
function settingsOf(app: AppSettings, behaviour: FeishuAppBehaviour): FeishuSettings {
  const common = {
    ...behaviour,
    domain: app.domain,
    appId: app.appId,
    appSecret: app.appSecret,
    ...(app.verificationToken ? { verificationToken: app.verificationToken } : {}),
    ...(app.allow ? { allow: app.allow } : {}),
    ...(app.agent ? { agent: app.agent } : {}),
  };
  if (app.transport === "webhook") {
    // loadApps refused a webhook app without its key; an empty one can only come from a hand-built config.
    if (!app.encryptKey) throw new ConfigError(`Invalid configuration:\n${WEBHOOK_NEEDS_KEY}`);
    return { ...common, transport: "webhook", encryptKey: app.encryptKey };
  }
  return { ...common, transport: "ws", ...(app.encryptKey ? { encryptKey: app.encryptKey } : {}) };
}

function pickKnown(env: Record<string, string | undefined>): Record<string, string> {
  const known: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined) known[key] = value;
  }
  return known;
}

/** Lark (the international tenant): `lark`, or its Open API's base URL (open.larksuite.com, any scheme/path). */
export function isLarkDomain(domain: string): boolean {
  if (domain === "lark") return true;
  if (domain === "feishu") return false;
  try {
    const host = new URL(domain).hostname.toLowerCase();
    return host === "larksuite.com" || host.endsWith(".larksuite.com");
  } catch (error) {
    if (error instanceof TypeError) return false;
    throw error;
  }
}
