import path from "node:path";
import { z } from "zod";
import { ConfigError } from "./errors.ts";
import { type AcpConfig, acpConfigFrom, acpEnvShape, acpProblems } from "./harness/agents/acp/config.ts";
import { isInside } from "./harness/agents/agent-user.ts";
import { DEFAULT_RUN_BUDGET } from "./harness/agents/budget.ts";
import { isolationEnvShape, type SandboxSetting } from "./harness/agents/isolation-config.ts";
import { LOCALES, type Locale } from "./strings.ts";

/**
 * The environment the service reads, validated once at start-up (DESIGN §10).
 * Only `main.ts` (and the CLI entry points) hand the real environment to `loadConfig`.
 */

const intFrom = (name: string, min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(
      z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`),
    );

const optionalText = z
  .string()
  .trim()
  .transform((value) => (value === "" ? undefined : value))
  .optional();

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

const envSchema = z.object({
  PORT: intFrom("PORT", 0, 65_535).default(3000),
  HOST: optionalText,
  DATA_DIR: z.string().trim().min(1).default("./data"),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  FEISHU_APP_ID: optionalText,
  FEISHU_APP_SECRET: optionalText,
  FEISHU_DOMAIN: z
    .string()
    .trim()
    .refine(
      (value) => value === "feishu" || value === "lark" || /^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(value),
      {
        message: 'FEISHU_DOMAIN accepts "feishu", "lark" or a base URL such as http://127.0.0.1:9999',
      },
    )
    .default("feishu"),
  FEISHU_TRANSPORT: z.enum(["ws", "webhook"]).default("ws"),
  // How progress cards are updated (issue 29): IM PATCH (default), or CardKit entities that stream the answer.
  FEISHU_CARD_TRANSPORT: z
    .enum(["im", "cardkit"], { message: "FEISHU_CARD_TRANSPORT accepts im or cardkit" })
    .default("im"),
  // The bot's language (issue 19): unset, a Lark tenant (FEISHU_DOMAIN=lark) gets English, others Chinese.
  BOT_LOCALE: optionalText.pipe(z.enum(LOCALES, { message: "BOT_LOCALE accepts zh_cn or en_us" }).optional()),
  FEISHU_ENCRYPT_KEY: optionalText,
  FEISHU_VERIFICATION_TOKEN: optionalText,
  FEISHU_CALLBACK_SETTLE_MS: intFrom("FEISHU_CALLBACK_SETTLE_MS", 0, 10_000).default(1000),
  AGENT: z.enum(["demo", "openai", "acp"]).default("demo"),
  ...acpEnvShape,
  ...isolationEnvShape,
  OPENAI_BASE_URL: optionalText,
  OPENAI_API_KEY: optionalText,
  OPENAI_MODEL: optionalText,
  ASK_TIMEOUT_MS: intFrom("ASK_TIMEOUT_MS", 1_000, 24 * 60 * 60 * 1000).default(900_000),
  // Durable asks (issue 16): the reminder before a deadline (0: none), how much 延长 may add in all, and the
  // zone the card's absolute deadline (请在 15:42 前回答) is written in.
  ASK_REMIND_BEFORE_MS: intFrom("ASK_REMIND_BEFORE_MS", 0, 24 * 60 * 60 * 1000).default(300_000),
  ASK_EXTEND_MAX_MS: intFrom("ASK_EXTEND_MAX_MS", 0, 7 * 24 * 60 * 60 * 1000).default(3_600_000),
  ASK_TIME_ZONE: z
    .string()
    .refine(validZone, { message: "ASK_TIME_ZONE must be an IANA time zone such as Asia/Shanghai" })
    .default("Asia/Shanghai"),
  CARD_PATCH_INTERVAL_MS: intFrom("CARD_PATCH_INTERVAL_MS", 200, 60_000).default(1000),
  // Usage footer (issue 30): an ended card's last line says what the run took and cost.
  CARD_FOOTER: z
    .enum(["on", "off", "true", "false", "1", "0"], { message: "CARD_FOOTER accepts on or off" })
    .transform((value) => value === "on" || value === "true" || value === "1")
    .default(true),
  DEMO_STEP_MS: intFrom("DEMO_STEP_MS", 0, 60_000).default(500),
  // One run's budget across all its sub-agents (harness/agents/budget.ts).
  MAX_MODEL_REQUESTS_PER_RUN: intFrom("MAX_MODEL_REQUESTS_PER_RUN", 1, 10_000).default(
    DEFAULT_RUN_BUDGET.modelRequests,
  ),
  MAX_SUBAGENTS_PER_RUN: intFrom("MAX_SUBAGENTS_PER_RUN", 0, 1_000).default(DEFAULT_RUN_BUDGET.subAgents),
  MAX_DELEGATE_DEPTH: intFrom("MAX_DELEGATE_DEPTH", 0, 5).default(DEFAULT_RUN_BUDGET.depth),
  PUBLIC_URL: optionalText.pipe(z.url({ message: "PUBLIC_URL must be an absolute URL" }).optional()),
  FEISHU_ASK_PING: z
    .enum(["on", "off", "true", "false", "1", "0"], { message: "FEISHU_ASK_PING accepts on or off" })
    .transform((value) => value === "on" || value === "true" || value === "1")
    .default(true),
  // topics (issue 19): a task from a plain group message answers in a new thread under it (feishu/topics.ts).
  FEISHU_REPLY_IN_THREAD: z
    .enum(["on", "off", "true", "false", "1", "0"], { message: "FEISHU_REPLY_IN_THREAD accepts on or off" })
    .transform((value) => value === "on" || value === "true" || value === "1")
    .default(false),
  // Local mode only: the emulated tenant applies its data-loss-prevention audit (230028, emulator dlp.ts).
  EMULATOR_DLP_AUDIT: z
    .enum(["on", "off", "true", "false", "1", "0"], { message: "EMULATOR_DLP_AUDIT accepts on or off" })
    .transform((value) => value === "on" || value === "true" || value === "1")
    .default(false),
  // 32 characters: a secret that signs every user's token must not be guessable offline from one token.
  AUTH_SECRET: optionalText.pipe(
    z
      .string()
      .min(32, "AUTH_SECRET must be at least 32 characters (e.g. openssl rand -base64 32)")
      .optional(),
  ),
  SIGNIN_TTL_HOURS: intFrom("SIGNIN_TTL_HOURS", 1, 24 * 30).default(12),
  QUEUE_MAX: intFrom("QUEUE_MAX", 1, 1000).default(20),
  // MCP servers whose tools the OpenAI agent may call (harness/agents/mcp/).
  MCP_CONFIG: optionalText,
  MCP_TOOL_TIMEOUT_MS: intFrom("MCP_TOOL_TIMEOUT_MS", 100, 60 * 60 * 1000).default(60_000),
  // Who may hold the HTTP server's sockets (web/connection-slots.ts); unset, the cap follows `ulimit -n`.
  MAX_CONNECTIONS: optionalText.pipe(intFrom("MAX_CONNECTIONS", 64, 1_000_000).optional()),
  MAX_CONNECTIONS_PER_ADDRESS: intFrom("MAX_CONNECTIONS_PER_ADDRESS", 1, 1_000_000).default(32),
});

export type Env = z.infer<typeof envSchema>;

/** Every variable the service reads (the README's configuration table is tested against this). */
export const ENV_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

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
} & FeishuTransportSettings;

/** Local mode before the emulator starts: no credentials yet (local/index.ts fills them in). */
export type LocalFeishuSettings = FeishuAppBehaviour & {
  transport: "ws" | "webhook";
  verificationToken?: string;
  /** EMULATOR_DLP_AUDIT: the emulated tenant refuses plain e-mail addresses and phone numbers (230028). */
  dlpAudit: boolean;
};

/** The mode decides what the Feishu section holds (a discriminated union on `mode`). */
export type Config = ConfigBase &
  ({ mode: "feishu"; feishu: FeishuSettings } | { mode: "local"; feishu: LocalFeishuSettings });

/** A config whose Feishu app is known: feishu mode as loaded, or local mode once the emulator runs. */
export type RunnableConfig = ConfigBase & { mode: Config["mode"]; feishu: FeishuSettings };

export interface ConfigBase {
  port: number;
  /** The interface to listen on: 127.0.0.1 in local mode unless HOST says otherwise; all interfaces in feishu mode. */
  host: string | undefined;
  dataDir: string;
  /** WORKSPACES_DIR: the chats' workspaces (default `DATA_DIR/workspaces`). */
  workspacesDir: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** The bot's language: replies, summaries and each card's `content`; cards carry every locale besides. */
  locale: Locale;
  agent: {
    kind: "demo" | "openai" | "acp";
    demoStepMs: number;
    openai: { baseUrl?: string; apiKey?: string; model?: string };
    /** One run's budget, shared by all its sub-agents. */
    budget: { modelRequests: number; subAgents: number; depth: number };
    acp?: AcpConfig;
    /** `MCP_CONFIG`: the mcpServers file, and how long one MCP tool call may take. */
    mcp: { configFile?: string; toolTimeoutMs: number };
  };
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

const WEBHOOK_NEEDS_KEY =
  "  FEISHU_ENCRYPT_KEY: required with FEISHU_TRANSPORT=webhook (bodies are decrypted and signed with it)";

/** Parse the environment. A bad value throws one ConfigError naming every bad variable and what it accepts. */
export function loadConfig(env: Record<string, string | undefined>): Config {
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
  const mode = e.FEISHU_APP_ID ? "feishu" : "local";
  if (mode === "feishu") {
    if (!e.FEISHU_APP_SECRET) problems.push("  FEISHU_APP_SECRET: required when FEISHU_APP_ID is set");
    if (!e.AUTH_SECRET) problems.push("  AUTH_SECRET: required in feishu mode (at least 32 characters)");
    if (e.FEISHU_TRANSPORT === "webhook" && !e.FEISHU_ENCRYPT_KEY) problems.push(WEBHOOK_NEEDS_KEY);
  }
  if (e.AGENT === "openai") {
    if (!e.OPENAI_BASE_URL) problems.push("  OPENAI_BASE_URL: required with AGENT=openai");
    if (!e.OPENAI_MODEL) problems.push("  OPENAI_MODEL: required with AGENT=openai");
  }
  if (e.AGENT === "acp") problems.push(...acpProblems(e));
  if (e.MCP_CONFIG && e.AGENT !== "openai")
    problems.push("  MCP_CONFIG: MCP tools are offered to the OpenAI agent; set AGENT=openai");
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.join("\n")}`);

  const base: ConfigBase = {
    port: e.PORT,
    // Local mode's console lets anyone act as any user: loopback only, unless the operator asks for more.
    host: e.HOST ?? (mode === "local" ? "127.0.0.1" : undefined),
    dataDir: e.DATA_DIR,
    workspacesDir: e.WORKSPACES_DIR ?? path.join(e.DATA_DIR, "workspaces"),
    logLevel: e.LOG_LEVEL,
    locale: e.BOT_LOCALE ?? (isLarkDomain(e.FEISHU_DOMAIN) ? "en_us" : "zh_cn"),
    agent: {
      kind: e.AGENT,
      demoStepMs: e.DEMO_STEP_MS,
      openai: { baseUrl: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY, model: e.OPENAI_MODEL },
      budget: {
        modelRequests: e.MAX_MODEL_REQUESTS_PER_RUN,
        subAgents: e.MAX_SUBAGENTS_PER_RUN,
        depth: e.MAX_DELEGATE_DEPTH,
      },
      ...(e.AGENT === "acp" ? { acp: acpConfigFrom(e, env) } : {}),
      mcp: { configFile: e.MCP_CONFIG, toolTimeoutMs: e.MCP_TOOL_TIMEOUT_MS },
    },
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
    isolation: {
      sandbox: e.AGENT_SANDBOX,
      hidden: [
        path.resolve(e.DATA_DIR),
        // Workspaces moved out of DATA_DIR are hidden as a whole too; each child gets its own bound back.
        ...(e.WORKSPACES_DIR && !isInside(path.resolve(e.WORKSPACES_DIR), path.resolve(e.DATA_DIR))
          ? [path.resolve(e.WORKSPACES_DIR)]
          : []),
        ...(e.MCP_CONFIG ? [path.resolve(e.MCP_CONFIG)] : []),
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
  // The checks above made these present in feishu mode; the narrowing says so to the type checker once.
  if (mode === "local" || !e.FEISHU_APP_ID || !e.FEISHU_APP_SECRET)
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
  const app = { ...behaviour, appId: e.FEISHU_APP_ID, appSecret: e.FEISHU_APP_SECRET, ...verification };
  const encrypt = e.FEISHU_ENCRYPT_KEY ? { encryptKey: e.FEISHU_ENCRYPT_KEY } : {};
  if (e.FEISHU_TRANSPORT === "webhook") {
    if (!e.FEISHU_ENCRYPT_KEY) throw new ConfigError(`Invalid configuration:\n${WEBHOOK_NEEDS_KEY}`);
    return {
      ...base,
      mode: "feishu",
      feishu: { ...app, transport: "webhook", encryptKey: e.FEISHU_ENCRYPT_KEY },
    };
  }
  return { ...base, mode: "feishu", feishu: { ...app, transport: "ws", ...encrypt } };
}

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch (error) {
    return !(error instanceof RangeError);
  }
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
