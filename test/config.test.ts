import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("runs in local mode with the documented defaults when nothing is set", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      dataDir: "./data",
      logLevel: "info",
      mode: "local",
      feishu: { domain: "feishu", transport: "ws" },
      agent: { kind: "demo", demoStepMs: 500 },
      askTimeoutMs: 900_000,
      cardPatchIntervalMs: 1000,
      publicUrl: "http://localhost:3000",
    });
    expect(config.authSecret).toBeUndefined();
  });

  it("switches to feishu mode with credentials and a secret, and accepts a base URL with a port", () => {
    const config = loadConfig({
      FEISHU_APP_ID: "cli_x",
      FEISHU_APP_SECRET: "s",
      AUTH_SECRET: "0123456789abcdef0123456789abcdef",
      FEISHU_DOMAIN: "http://127.0.0.1:9999",
      PUBLIC_URL: "https://bot.example.com/",
    });
    expect(config.mode).toBe("feishu");
    expect(config.feishu.domain).toBe("http://127.0.0.1:9999");
    expect(config.publicUrl).toBe("https://bot.example.com");
  });

  it.each([
    [{ PORT: "abc" }, "PORT: PORT must be a whole number"],
    [{ PORT: "70000" }, "PORT: PORT must be at most 65535"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ FEISHU_DOMAIN: "example" }, 'FEISHU_DOMAIN: FEISHU_DOMAIN accepts "feishu", "lark" or a base URL'],
    [{ FEISHU_TRANSPORT: "http" }, "FEISHU_TRANSPORT"],
    [{ ASK_TIMEOUT_MS: "10" }, "ASK_TIMEOUT_MS: ASK_TIMEOUT_MS must be at least 1000"],
    [{ CARD_PATCH_INTERVAL_MS: "50" }, "CARD_PATCH_INTERVAL_MS must be at least 200"],
    [{ FEISHU_CALLBACK_SETTLE_MS: "soon" }, "FEISHU_CALLBACK_SETTLE_MS must be a whole number"],
    [{ FEISHU_CALLBACK_SETTLE_MS: "60000" }, "FEISHU_CALLBACK_SETTLE_MS must be at most 10000"],
    [{ AGENT: "gpt" }, "AGENT"],
    [{ PUBLIC_URL: "not a url" }, "PUBLIC_URL must be an absolute URL"],
    [{ AUTH_SECRET: "short" }, "AUTH_SECRET must be at least 32 characters"],
    [{ FEISHU_ASK_PING: "sometimes" }, "FEISHU_ASK_PING accepts on or off"],
    [{ FEISHU_APP_ID: "cli_x" }, "FEISHU_APP_SECRET: required when FEISHU_APP_ID is set"],
    [{ FEISHU_APP_ID: "cli_x", FEISHU_APP_SECRET: "s" }, "AUTH_SECRET: required in feishu mode"],
    [
      {
        FEISHU_APP_ID: "cli_x",
        FEISHU_APP_SECRET: "s",
        AUTH_SECRET: "0123456789abcdef0123456789abcdef",
        FEISHU_TRANSPORT: "webhook",
      },
      "FEISHU_ENCRYPT_KEY: required with FEISHU_TRANSPORT=webhook",
    ],
    [{ AGENT: "openai" }, "OPENAI_BASE_URL: required with AGENT=openai"],
  ])("stops on %j with a message naming the variable", (env, message) => {
    expect(errorOf(env)).toContain(message);
  });

  it("holds the Feishu app's credentials (and the webhook's key) by mode, so adapters need not check them", () => {
    const secret = "0123456789abcdef0123456789abcdef";
    const app = { FEISHU_APP_ID: "cli_x", FEISHU_APP_SECRET: "s", AUTH_SECRET: secret };
    const hook = loadConfig({ ...app, FEISHU_TRANSPORT: "webhook", FEISHU_ENCRYPT_KEY: "k" });
    expect(hook.mode).toBe("feishu");
    expect(hook.feishu).toMatchObject({
      appId: "cli_x",
      appSecret: "s",
      transport: "webhook",
      encryptKey: "k",
    });
    expect(loadConfig(app).feishu).toMatchObject({ appId: "cli_x", transport: "ws" });
    // Local mode has no app until the emulator gives it one (local/index.ts).
    const local = loadConfig({ FEISHU_TRANSPORT: "webhook" });
    expect(local.mode).toBe("local");
    expect(local.feishu).not.toHaveProperty("appId");
    expect(local.feishu).not.toHaveProperty("encryptKey");
  });

  it("names every bad variable at once", () => {
    const message = errorOf({ PORT: "x", DEMO_STEP_MS: "-1" });
    expect(message).toContain("PORT");
    expect(message).toContain("DEMO_STEP_MS");
  });

  it("turns the ask ping off with FEISHU_ASK_PING=off", () => {
    expect(loadConfig({}).feishu.askPing).toBe(true);
    expect(loadConfig({ FEISHU_ASK_PING: "off" }).feishu.askPing).toBe(false);
  });

  it("answers plain group messages in a new thread only with FEISHU_REPLY_IN_THREAD=on", () => {
    expect(loadConfig({}).feishu.replyInThread).toBe(false);
    expect(loadConfig({ FEISHU_REPLY_IN_THREAD: "on" }).feishu.replyInThread).toBe(true);
    expect(errorOf({ FEISHU_REPLY_IN_THREAD: "maybe" })).toContain(
      "FEISHU_REPLY_IN_THREAD accepts on or off",
    );
  });

  it("updates progress cards by IM PATCH unless FEISHU_CARD_TRANSPORT=cardkit", () => {
    expect(loadConfig({}).feishu.cardTransport).toBe("im");
    expect(loadConfig({ FEISHU_CARD_TRANSPORT: "cardkit" }).feishu.cardTransport).toBe("cardkit");
    expect(errorOf({ FEISHU_CARD_TRANSPORT: "stream" })).toContain(
      "FEISHU_CARD_TRANSPORT accepts im or cardkit",
    );
  });

  it("turns the emulated tenant's data-loss-prevention audit on in local mode with EMULATOR_DLP_AUDIT=on", () => {
    const local = (env: Record<string, string>) => {
      const config = loadConfig(env);
      return config.mode === "local" ? config.feishu.dlpAudit : undefined;
    };
    expect(local({})).toBe(false);
    expect(local({ EMULATOR_DLP_AUDIT: "on" })).toBe(true);
    expect(errorOf({ EMULATOR_DLP_AUDIT: "maybe" })).toContain("EMULATOR_DLP_AUDIT accepts on or off");
  });

  it("waits 1 s after a callback's answer by default, and takes another settle delay (0 included)", () => {
    expect(loadConfig({}).feishu.callbackSettleMs).toBe(1000);
    expect(loadConfig({ FEISHU_CALLBACK_SETTLE_MS: "0" }).feishu.callbackSettleMs).toBe(0);
    expect(loadConfig({ FEISHU_CALLBACK_SETTLE_MS: "2500" }).feishu.callbackSettleMs).toBe(2500);
  });

  it("ignores variables it does not know", () => {
    expect(loadConfig({ PATH: "/usr/bin", HOME: "/root" }).mode).toBe("local");
  });

  it("puts 会话详情 links on cards in local mode and with PUBLIC_URL, never to localhost on a real tenant", () => {
    const feishu = {
      FEISHU_APP_ID: "cli_x",
      FEISHU_APP_SECRET: "s",
      AUTH_SECRET: "0123456789abcdef0123456789abcdef",
    };
    expect(loadConfig({}).detailsLinks).toBe(true);
    expect(loadConfig(feishu).detailsLinks).toBe(false);
    expect(loadConfig({ ...feishu, PUBLIC_URL: "https://bot.example.com" }).detailsLinks).toBe(true);
  });
});

describe("durable ask settings (issue 16)", () => {
  it("defaults to a 5-minute reminder, an hour of 延长 and Asia/Shanghai", () => {
    expect(loadConfig({}).asks).toEqual({
      remindBeforeMs: 300_000,
      extendMaxMs: 3_600_000,
      timeZone: "Asia/Shanghai",
    });
  });

  it("takes a zone and bounds, and names a zone that does not exist", () => {
    const config = loadConfig({
      ASK_REMIND_BEFORE_MS: "0",
      ASK_EXTEND_MAX_MS: "900000",
      ASK_TIME_ZONE: "Europe/Berlin",
    });
    expect(config.asks).toEqual({ remindBeforeMs: 0, extendMaxMs: 900_000, timeZone: "Europe/Berlin" });
    expect(errorOf({ ASK_TIME_ZONE: "Mars/Olympus" })).toContain("ASK_TIME_ZONE must be an IANA time zone");
  });
});

describe("BOT_LOCALE (issue 19)", () => {
  it("speaks Chinese on Feishu and English on Lark unless BOT_LOCALE says otherwise", () => {
    expect(loadConfig({}).locale).toBe("zh_cn");
    expect(loadConfig({ FEISHU_DOMAIN: "feishu" }).locale).toBe("zh_cn");
    expect(loadConfig({ FEISHU_DOMAIN: "lark" }).locale).toBe("en_us");
    expect(loadConfig({ FEISHU_DOMAIN: "http://127.0.0.1:9999" }).locale).toBe("zh_cn");
    // Lark's Open API given as a base URL is Lark too; Feishu's, or a look-alike host, is not.
    expect(loadConfig({ FEISHU_DOMAIN: "https://open.larksuite.com" }).locale).toBe("en_us");
    expect(loadConfig({ FEISHU_DOMAIN: "https://open.feishu.cn" }).locale).toBe("zh_cn");
    expect(loadConfig({ FEISHU_DOMAIN: "https://larksuite.com.example" }).locale).toBe("zh_cn");
    expect(loadConfig({ FEISHU_DOMAIN: "lark", BOT_LOCALE: "zh_cn" }).locale).toBe("zh_cn");
    expect(loadConfig({ BOT_LOCALE: " en_us " }).locale).toBe("en_us");
    // Empty means unset, like every other optional variable.
    expect(loadConfig({ FEISHU_DOMAIN: "lark", BOT_LOCALE: "" }).locale).toBe("en_us");
  });

  it("refuses a locale it has no catalogue for, naming the accepted values", () => {
    expect(errorOf({ BOT_LOCALE: "en" })).toContain("BOT_LOCALE accepts zh_cn or en_us");
    expect(errorOf({ BOT_LOCALE: "ja_jp" })).toContain("BOT_LOCALE");
  });
});

describe("DATABASE_URL (issue 27)", () => {
  const feishu = { FEISHU_APP_ID: "cli_x", FEISHU_APP_SECRET: "s" };
  const secret = "0123456789abcdef0123456789abcdef";

  it("keeps the store in DATA_DIR/bot.sqlite when unset, and selects Postgres when set", () => {
    expect(loadConfig({}).database).toEqual({ kind: "sqlite", file: "data/bot.sqlite" });
    expect(loadConfig({ DATA_DIR: "/srv/bot", DATABASE_URL: " " }).database).toEqual({
      kind: "sqlite",
      file: "/srv/bot/bot.sqlite",
    });
    const url = "postgresql://bot:s3cret@db.internal:5433/bot?sslmode=require";
    expect(loadConfig({ ...feishu, AUTH_SECRET: secret, DATABASE_URL: url }).database).toEqual({
      kind: "postgres",
      leaseMs: 10_000,
      url,
    });
    expect(loadConfig({ DATABASE_URL: "postgres://localhost/bot" }).database.kind).toBe("postgres");
  });

  it.each([
    "mysql://bot:hunter2-password@db/bot",
    "pg-primary:5432/bot",
    // An unencoded '/' in the password makes the rest of it a port (pg would read it the same way).
    "postgres://bot:hunter2/password@db/bot",
  ])("refuses %s, naming the variable and never repeating the password", (url) => {
    const message = errorOf({ DATABASE_URL: url });
    expect(message).toContain("DATABASE_URL must be a postgres:// or postgresql:// URL");
    expect(message).not.toContain("hunter2");
    expect(message).not.toContain(url);
  });

  it("needs AUTH_SECRET outside local mode, the same on every instance, and says why", () => {
    const message = errorOf({ ...feishu, DATABASE_URL: "postgres://bot:pw@db/bot" });
    expect(message).toContain("AUTH_SECRET: required in feishu mode");
    expect(message).toContain("the same value on every instance");
    expect(message).not.toContain("pw@db");
    // Local mode is one process for trying it out: the secret it makes under DATA_DIR is enough.
    const local = loadConfig({ DATABASE_URL: "postgres://bot:pw@db/bot" });
    expect(local.mode).toBe("local");
    expect(local.authSecret).toBeUndefined();
  });

  it("lists DATABASE_URL among the secrets removed from the process once read", () => {
    expect(loadConfig({}).secretEnvNames).not.toContain("DATABASE_URL");
    expect(loadConfig({ DATABASE_URL: "postgres://bot:pw@db/bot" }).secretEnvNames).toContain("DATABASE_URL");
  });
});
