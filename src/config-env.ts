import { z } from "zod";
import { acpEnvShape } from "./harness/agents/acp/config.ts";
import { DEFAULT_RUN_BUDGET } from "./harness/agents/budget.ts";
import { isolationEnvShape } from "./harness/agents/isolation-config.ts";
import { LOCALES } from "./strings/index.ts";

/**
 * Every environment variable the service reads and how each is checked: the schema `loadConfig` (config.ts)
 * parses once at start-up into the settings.
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

/** A comma-separated list of Feishu ids; blank entries are dropped, anything but letters, digits and _ refused. */
const idList = (name: string) =>
  z
    .string()
    .transform((value) =>
      value
        .split(",")
        .map((id) => id.trim())
        .filter((id) => id !== ""),
    )
    .pipe(
      z.array(
        z.string().regex(/^[A-Za-z0-9_]+$/, `${name} lists Feishu ids (ou_…, oc_…) separated by commas`),
      ),
    )
    .optional();

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export const envSchema = z.object({
  PORT: intFrom("PORT", 0, 65_535).default(3000),
  // The config file (config-file.ts): read by main.ts before the rest; default ./feishu-progress-bot.json if present.
  CONFIG_FILE: optionalText,
  HOST: optionalText,
  DATA_DIR: z.string().trim().min(1).default("./data"),
  // Postgres for several instances (issue 27, docs/several-instances.md); unset, SQLite at DATA_DIR/bot.sqlite.
  // The message never repeats the value: it holds the database's password.
  DATABASE_URL: optionalText.pipe(
    z
      .string()
      .refine(isPostgresUrl, {
        message:
          "DATABASE_URL must be a postgres:// or postgresql:// URL such as postgres://bot:PASSWORD@db.internal:5432/bot (percent-encode @ : / # ? in the password)",
      })
      .optional(),
  ),
  // How long an instance's hold on its runs and on the long connection lasts without a renewal: a dead
  // instance's runs are adopted about this long after it died (docs/several-instances.md).
  INSTANCE_LEASE_MS: intFrom("INSTANCE_LEASE_MS", 1_000, 120_000).default(10_000),
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
  // The app's allow-list (issue 30): comma-separated open ids (ou_…) and group chat ids (oc_…); unset, anyone.
  FEISHU_ALLOWED_USERS: idList("FEISHU_ALLOWED_USERS"),
  FEISHU_ALLOWED_CHATS: idList("FEISHU_ALLOWED_CHATS"),
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

/** What `pg` accepts as a connection URL: the two schemes, and a URL that parses (a raw `#` or `/` in a password does not). */
function isPostgresUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === "postgres:" || protocol === "postgresql:";
}

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch (error) {
    return !(error instanceof RangeError);
  }
}
