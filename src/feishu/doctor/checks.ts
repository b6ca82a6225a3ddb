import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { loadManifest, MANIFEST_FILE, SCOPE_OF_CALL } from "../app-manifest.ts";
import { SCOPE_MISSING_CODE } from "../scope-notice.ts";
import { FEISHU_WEBHOOK_PATH } from "../webhook.ts";

/**
 * `npm run doctor`, and the same checks as warnings when the bot starts in feishu mode: what a real tenant
 * may be missing, each a line that says what to do, and plainly what no API can tell from outside.
 */

export type CheckStatus = "ok" | "warn" | "fail" | "unknown";
export interface Check {
  name: string;
  status: CheckStatus;
  line: string;
}

export interface DoctorTarget {
  appId: string;
  appSecret: string;
  /** `feishu`, `lark` or a base URL. */
  domain: string;
  transport: "ws" | "webhook";
  encryptKey?: string;
  /** PUBLIC_URL when set. */
  publicUrl?: string;
  /** What to check when the credentials are refused (default: the `FEISHU_*` variables of a single app). */
  credentialSettings?: string;
  /** Where this app's webhook answers under PUBLIC_URL (default `/feishu/events`, the single app's). */
  webhookPath?: string;
}

/** Beyond this the bot's tokens (refused 2 minutes in the future) and Feishu's timestamps disagree. */
const MAX_SKEW_MS = 60_000;
const TIMEOUT_MS = 10_000;

export function openApiBase(domain: string): string {
  if (domain === "feishu") return "https://open.feishu.cn";
  if (domain === "lark") return "https://open.larksuite.com";
  return domain.replace(/\/+$/, "");
}

/** What the checks cannot see, said every time (no Open API tells an app these about itself). */
export const CANNOT_CHECK = [
  "the event subscription mode and the callback configuration in the developer console (事件与回调): only a delivered message proves them",
  "whether a version with the bot is published, and who is in its availability scope (可用范围)",
  "the event scopes (im:message.p2p_msg:readonly, im:message.group_at_msg:readonly): without them messages simply never arrive",
];

interface Reply {
  status: number;
  body: Record<string, unknown>;
  date: string | null;
}

async function call(url: string, init: RequestInit): Promise<Reply> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: response.status, body, date: response.headers.get("date") };
}

const json = (data: unknown, token?: string): RequestInit => ({
  method: "POST",
  headers: {
    "content-type": "application/json; charset=utf-8",
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  },
  body: JSON.stringify(data),
});

export async function runChecks(target: DoctorTarget, now: () => number = Date.now): Promise<Check[]> {
  const base = openApiBase(target.domain);
  const checks: Check[] = [];
  let token: string | undefined;
  try {
    const sentAt = now();
    const reply = await call(
      `${base}/open-apis/auth/v3/tenant_access_token/internal`,
      json({
        app_id: target.appId,
        app_secret: target.appSecret,
      }),
    );
    if (reply.body.code === 0 && typeof reply.body.tenant_access_token === "string") {
      token = reply.body.tenant_access_token;
      checks.push({
        name: "credentials",
        status: "ok",
        line: `${target.appId} gets a tenant token from ${base}`,
      });
    } else
      checks.push({
        name: "credentials",
        status: "fail",
        line: `${base} refused ${target.appId}'s credentials (code ${String(reply.body.code)}: ${String(reply.body.msg)}): check ${target.credentialSettings ?? "FEISHU_APP_ID, FEISHU_APP_SECRET and FEISHU_DOMAIN, or run npm run setup"}`,
      });
    checks.push(clockCheck(reply.date, sentAt, now()));
  } catch (error) {
    checks.push({
      name: "credentials",
      status: "fail",
      line: `${base} is not reachable: ${describe(error)}`,
    });
  }
  if (token) {
    checks.push(await botCheck(base, token));
    checks.push(...(await scopeChecks(base, token)));
  }
  checks.push(await transportCheck(base, target));
  checks.push(await publicUrlCheck(target.publicUrl));
  return checks;
}

function clockCheck(date: string | null, sentAt: number, receivedAt: number): Check {
  const server = date ? Date.parse(date) : Number.NaN;
  if (!Number.isFinite(server))
    return {
      name: "clock",
      status: "unknown",
      line: "the Open API sent no Date header: clock skew not checked",
    };
  // The header has whole seconds: allow the round trip and the truncation.
  const skew = (sentAt + receivedAt) / 2 - server - 500;
  if (Math.abs(skew) <= MAX_SKEW_MS + (receivedAt - sentAt))
    return {
      name: "clock",
      status: "ok",
      line: `this machine's clock is within ${Math.ceil(MAX_SKEW_MS / 1000)} s of Feishu's`,
    };
  return {
    name: "clock",
    status: "warn",
    line: `this machine's clock is ${Math.round(skew / 1000)} s off Feishu's: fix NTP (webhook timestamps and tokens depend on it)`,
  };
}

async function botCheck(base: string, token: string): Promise<Check> {
  const reply = await call(`${base}/open-apis/bot/v3/info`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const bot = reply.body.bot as { app_name?: unknown } | undefined;
  if (reply.body.code === 0 && bot)
    return { name: "bot", status: "ok", line: `the bot capability is on (${String(bot.app_name ?? "")})` };
  return {
    name: "bot",
    status: "fail",
    line: `the bot capability looks off (code ${String(reply.body.code)}: ${String(reply.body.msg)}): turn it on under 应用能力 → 机器人 (Features → Bot) and publish a version`,
  };
}

/**
 * The permission check comes before anything else about a call: a call on an id that cannot exist answers
 * 99991672 when the scope is missing, and some other error (not found, invalid) when it is granted.
 */
const NO_MESSAGE = "om_doctor_probe";
const NO_USER = "ou_doctor_probe";
const PROBES: Record<string, { method: string; path: string; body?: unknown }> = {
  "im.message.patch": {
    method: "PATCH",
    path: `/open-apis/im/v1/messages/${NO_MESSAGE}`,
    body: { content: "{}" },
  },
  "im.message.get": { method: "GET", path: `/open-apis/im/v1/messages/${NO_MESSAGE}` },
  "contact.user.get": {
    method: "GET",
    path: `/open-apis/contact/v3/users/${NO_USER}?user_id_type=open_id`,
  },
};

async function scopeChecks(base: string, token: string): Promise<Check[]> {
  const manifest = loadManifest();
  const checks: Check[] = [];
  for (const [method, probe] of Object.entries(PROBES)) {
    const scope = SCOPE_OF_CALL[method] ?? method;
    const why = manifest.scopes.tenant.find((entry) => entry.name === scope)?.why ?? "";
    const reply = await call(`${base}${probe.path}`, {
      method: probe.method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json; charset=utf-8" },
      ...(probe.body ? { body: JSON.stringify(probe.body) } : {}),
    });
    checks.push(
      reply.body.code === SCOPE_MISSING_CODE
        ? {
            name: `scope ${scope}`,
            status: "fail",
            line: `missing scope ${scope} (${MANIFEST_FILE}: ${why}): grant it under 权限管理 (Permissions) and publish a version`,
          }
        : { name: `scope ${scope}`, status: "ok", line: `scope ${scope} granted` },
    );
  }
  return checks;
}

async function transportCheck(base: string, target: DoctorTarget): Promise<Check> {
  if (target.transport === "ws") {
    try {
      const reply = await call(
        `${base}/callback/ws/endpoint`,
        json({ AppID: target.appId, AppSecret: target.appSecret }),
      );
      const url = (reply.body.data as { URL?: unknown } | undefined)?.URL;
      if (reply.body.code === 0 && typeof url === "string")
        return {
          name: "long connection",
          status: "ok",
          line: "the long connection's endpoint hands out a socket",
        };
      return {
        name: "long connection",
        status: "fail",
        line: `the long connection's endpoint refused (code ${String(reply.body.code)}: ${String(reply.body.msg)})`,
      };
    } catch (error) {
      return {
        name: "long connection",
        status: "fail",
        line: `the long connection's endpoint is not reachable: ${describe(error)}`,
      };
    }
  }
  if (!target.publicUrl)
    return {
      name: "webhook",
      status: "fail",
      line: "FEISHU_TRANSPORT=webhook without PUBLIC_URL: Feishu has no URL to call",
    };
  const challenge = randomBytes(8).toString("hex");
  const body = {
    encrypt: encrypt(target.encryptKey ?? "", { challenge, token: "", type: "url_verification" }),
  };
  const url = `${target.publicUrl.replace(/\/+$/, "")}${target.webhookPath ?? FEISHU_WEBHOOK_PATH}`;
  try {
    const reply = await call(url, json(body));
    if (reply.body.challenge === challenge)
      return { name: "webhook", status: "ok", line: `${url} answers the URL check as Feishu sends it` };
    return {
      name: "webhook",
      status: "fail",
      line: `${url} did not answer the URL check (HTTP ${reply.status})`,
    };
  } catch (error) {
    return { name: "webhook", status: "fail", line: `${url} is not reachable: ${describe(error)}` };
  }
}

async function publicUrlCheck(publicUrl: string | undefined): Promise<Check> {
  if (!publicUrl)
    return {
      name: "PUBLIC_URL",
      status: "warn",
      line: "PUBLIC_URL is not set: cards carry no 会话详情 link",
    };
  try {
    const reply = await call(`${publicUrl.replace(/\/+$/, "")}/healthz`, { method: "GET" });
    if (reply.status === 200)
      return { name: "PUBLIC_URL", status: "ok", line: `${publicUrl} reaches this service` };
    return { name: "PUBLIC_URL", status: "warn", line: `${publicUrl}/healthz answered HTTP ${reply.status}` };
  } catch (error) {
    return {
      name: "PUBLIC_URL",
      status: "warn",
      line: `${publicUrl} is not reachable from here: ${describe(error)}`,
    };
  }
}

function encrypt(key: string, value: unknown): string {
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", createHash("sha256").update(key).digest(), iv);
  return Buffer.concat([iv, cipher.update(JSON.stringify(value), "utf8"), cipher.final()]).toString("base64");
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } })?.cause?.code;
  return typeof cause === "string" ? cause : error instanceof Error ? error.message : String(error);
}

/** The report: a mark and a line per check, then what cannot be checked. */
export function formatChecks(checks: Check[]): string[] {
  return [...formatCheckLines(checks), ...formatCannotCheck()];
}

/** A mark and a line per check. */
export function formatCheckLines(checks: Check[]): string[] {
  const mark: Record<CheckStatus, string> = { ok: "ok  ", warn: "warn", fail: "FAIL", unknown: "??  " };
  return checks.map((check) => `${mark[check.status]}  ${check.name}: ${check.line}`);
}

/** What no check can see, said once whatever the number of apps. */
export function formatCannotCheck(): string[] {
  return ["Not checked (no API tells):", ...CANNOT_CHECK.map((line) => `  - ${line}`)];
}
