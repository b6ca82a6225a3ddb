import * as lark from "@larksuiteoapi/node-sdk";
import { z } from "zod";
import type { Card } from "../cards/model.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  FEISHU_CODES,
  FeishuApiError,
  type FeishuMessenger,
  type MessageTarget,
  textContent,
} from "./messenger.ts";
import { scopeNotices } from "./scope-notice.ts";

/**
 * The Feishu messenger over the official SDK. Every call has a timeout (the SDK's axios has none), every
 * failure becomes a FeishuApiError with Feishu's code, the HTTP status and the reset header, and an
 * invalidated tenant token is dropped and fetched again once.
 */

export interface LarkMessengerOptions {
  appId: string;
  appSecret: string;
  /** "feishu", "lark" or a base URL such as http://127.0.0.1:9999 (SDK ≥ 1.73.2 handles the port). */
  domain: string;
  logger: Logger;
  timeoutMs?: number;
}

const envelope = z.object({ code: z.number(), msg: z.string().optional() }).passthrough();
const messageData = z.object({ data: z.object({ message_id: z.string() }) });
/** `deleted` is documented on every message item; an id that matches nothing gives no item. */
const messageItems = z.object({
  data: z.object({ items: z.array(z.object({ deleted: z.boolean().optional() })).optional() }),
});
const botData = z.object({ bot: z.object({ open_id: z.string(), app_name: z.string().optional() }) });
const userData = z.object({ data: z.object({ user: z.object({ name: z.string() }) }) });

export function resolveDomain(domain: string): lark.Domain | string {
  if (domain === "feishu") return lark.Domain.Feishu;
  if (domain === "lark") return lark.Domain.Lark;
  return domain.replace(/\/+$/, "");
}

export function createLarkClient(options: LarkMessengerOptions): {
  client: lark.Client;
  cache: lark.DefaultCache;
} {
  const cache = new lark.DefaultCache();
  const client = new lark.Client({
    appId: options.appId,
    appSecret: options.appSecret,
    domain: resolveDomain(options.domain),
    cache,
    logger: sdkLogger(options.logger),
    // LoggerLevel.fatal (0) is ignored by the SDK (falsy); error is the quietest level that works.
    loggerLevel: lark.LoggerLevel.error,
    // The default instance's interceptor unwraps `resp.data`; the SDK's own typing of it is looser than its port.
    httpInstance: withTimeout(
      lark.defaultHttpInstance as unknown as lark.HttpInstance,
      options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    ),
  });
  return { client, cache };
}

export function createLarkMessenger(options: LarkMessengerOptions): FeishuMessenger {
  const { client, cache } = createLarkClient(options);
  const noticeScope = scopeNotices(options.logger.child({ module: "feishu" }));

  async function call<T>(
    method: string,
    request: { method: string; url: string; data?: unknown; params?: Record<string, string> },
    schema: z.ZodType<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const response: unknown = await client.request(request);
        const head = envelope.safeParse(response);
        if (!head.success) throw new FeishuApiError({ method, message: "unexpected response shape" });
        if (head.data.code !== 0) {
          throw new FeishuApiError({
            method,
            message: head.data.msg ?? "error",
            feishuCode: head.data.code,
            httpStatus: 200,
          });
        }
        const parsed = schema.safeParse(response);
        if (!parsed.success)
          throw new FeishuApiError({ method, message: "unexpected response shape", httpStatus: 200 });
        return parsed.data;
      } catch (error) {
        const mapped = toFeishuError(method, error);
        const tokenProblem =
          mapped.feishuCode === FEISHU_CODES.tokenInvalid || mapped.feishuCode === FEISHU_CODES.tokenMissing;
        if (tokenProblem && attempt === 0) {
          // The SDK keeps a cached token until its own expiry; drop it so the next call fetches a fresh one.
          cache.values.clear();
          continue;
        }
        noticeScope(mapped);
        throw mapped;
      }
    }
  }

  const content = (card: Card) => JSON.stringify(card);
  /**
   * A reply, into the message's thread when asked. A refused thread is reported like any refusal: what to do
   * then is the channel's (thread-fallback.ts), the same over this messenger and the fake.
   */
  const reply = (messageId: string, body: Record<string, unknown>, inThread: boolean | undefined) =>
    call(
      "im.message.reply",
      {
        method: "POST",
        url: `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/reply`,
        // Only when asked: a plain reply's body stays exactly as before.
        data: inThread ? { ...body, reply_in_thread: true } : body,
      },
      messageData,
    );
  return {
    async replyCard(messageId, card, opts) {
      const data = {
        msg_type: "interactive",
        content: content(card),
        ...(opts?.uuid ? { uuid: opts.uuid } : {}),
      };
      const res = await reply(messageId, data, opts?.inThread);
      return { messageId: res.data.message_id };
    },
    async sendCard(target, card, opts) {
      const res = await call(
        "im.message.create",
        createRequest(target, "interactive", content(card), opts?.uuid),
        messageData,
      );
      return { messageId: res.data.message_id };
    },
    async patchCard(messageId, card) {
      await call(
        "im.message.patch",
        {
          method: "PATCH",
          url: `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}`,
          data: { content: content(card) },
        },
        envelope,
      );
    },
    async sendText(target, text, opts) {
      const body = textContent(text, opts?.mentionOpenIds);
      if (opts?.replyTo) {
        const res = await reply(opts.replyTo, { msg_type: "text", content: body }, opts.inThread);
        return { messageId: res.data.message_id };
      }
      const res = await call("im.message.create", createRequest(target, "text", body), messageData);
      return { messageId: res.data.message_id };
    },
    async editText(messageId, text, opts) {
      await call(
        "im.message.update",
        {
          method: "PUT",
          url: `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}`,
          data: { msg_type: "text", content: textContent(text, opts?.mentionOpenIds) },
        },
        envelope,
      );
    },
    async recall(messageId) {
      await call(
        "im.message.delete",
        { method: "DELETE", url: `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}` },
        envelope,
      );
    },
    async messageStatus(messageId) {
      const res = await call(
        "im.message.get",
        { method: "GET", url: `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}` },
        messageItems,
      );
      const items = res.data.items ?? [];
      return { deleted: items.length === 0 || items.some((item) => item.deleted === true) };
    },
    async botInfo() {
      const res = await call("bot.info", { method: "GET", url: "/open-apis/bot/v3/info" }, botData);
      return { openId: res.bot.open_id, name: res.bot.app_name ?? "" };
    },
    async userName(openId) {
      const res = await call(
        "contact.user.get",
        {
          method: "GET",
          url: `/open-apis/contact/v3/users/${encodeURIComponent(openId)}`,
          params: { user_id_type: "open_id" },
        },
        userData,
      );
      return res.data.user.name;
    },
  };
}

function createRequest(target: MessageTarget, msgType: string, body: string, uuid?: string) {
  const byChat = "chatId" in target;
  return {
    method: "POST",
    url: "/open-apis/im/v1/messages",
    params: { receive_id_type: byChat ? "chat_id" : "open_id" },
    data: {
      receive_id: byChat ? target.chatId : target.openId,
      msg_type: msgType,
      content: body,
      ...(uuid ? { uuid } : {}),
    },
  };
}

/** Maps whatever the SDK threw (an AxiosError for HTTP 4xx/5xx, a timeout, our own error) to FeishuApiError. */
export function toFeishuError(method: string, error: unknown): FeishuApiError {
  if (error instanceof FeishuApiError) return error;
  const e = error as {
    response?: { status?: unknown; data?: unknown; headers?: Record<string, unknown> };
    code?: unknown;
  };
  const response = e?.response;
  if (response && typeof response.status === "number") {
    const body = envelope.safeParse(response.data);
    const reset = Number(response.headers?.["x-ogw-ratelimit-reset"]);
    return new FeishuApiError({
      method,
      message: body.success ? (body.data.msg ?? `HTTP ${response.status}`) : `HTTP ${response.status}`,
      httpStatus: response.status,
      ...(body.success ? { feishuCode: body.data.code } : {}),
      ...(Number.isFinite(reset) && reset > 0 ? { retryAfterMs: reset * 1000 } : {}),
      cause: error,
    });
  }
  return new FeishuApiError({ method, message: describeError(error), cause: error });
}

/** Adds a timeout to every request the SDK makes, keeping its response interceptor. */
function withTimeout(base: lark.HttpInstance, timeoutMs: number): lark.HttpInstance {
  const opts = <T extends object | undefined>(o: T) => ({ timeout: timeoutMs, ...(o ?? {}) });
  return {
    request: (o) => base.request(opts(o)),
    get: (url, o) => base.get(url, opts(o)),
    delete: (url, o) => base.delete(url, opts(o)),
    head: (url, o) => base.head(url, opts(o)),
    options: (url, o) => base.options(url, opts(o)),
    post: (url, data, o) => base.post(url, data, opts(o)),
    put: (url, data, o) => base.put(url, data, opts(o)),
    patch: (url, data, o) => base.patch(url, data, opts(o)),
  };
}

const SECRET_PATTERNS: [RegExp, string][] = [
  [/Bearer\s+[A-Za-z0-9._-]+/g, "Bearer [redacted]"],
  [/("?(?:app_secret|appSecret|tenant_access_token|encrypt_key)"?\s*[:=]\s*"?)[^",\s}]+/g, "$1[redacted]"],
];

/**
 * The SDK calls its logger with one argument, the array of what it logged; give pino one clean line. Its
 * info lines (the long connection's "ws client ready", the hint about the developer console's subscription
 * mode) are for whoever debugs the SDK: they go out at debug, so the start-up banner stays short.
 */
export function sdkLogger(logger: Logger): lark.Logger {
  const child = logger.child({ module: "lark-sdk" });
  const wrap =
    (level: "error" | "warn" | "info" | "debug" | "trace") =>
    (...args: unknown[]) => {
      const parts = (args.length === 1 && Array.isArray(args[0]) ? args[0] : args).map(describePart);
      child[level]({ sdk: parts.map(redact) }, "lark sdk");
    };
  return {
    error: wrap("error"),
    warn: wrap("warn"),
    info: wrap("debug"),
    debug: wrap("debug"),
    trace: wrap("trace"),
  };
}

function describePart(part: unknown): string {
  if (typeof part === "string") return part;
  const axios = part as {
    isAxiosError?: boolean;
    message?: string;
    config?: { url?: string; method?: string };
    response?: { status?: number; data?: unknown };
  };
  if (axios?.isAxiosError) {
    return `${axios.config?.method ?? ""} ${axios.config?.url ?? ""} → ${axios.response?.status ?? "no response"} ${JSON.stringify(axios.response?.data ?? axios.message)}`;
  }
  return describeError(part);
}

function redact(text: string): string {
  return SECRET_PATTERNS.reduce((acc, [pattern, replacement]) => acc.replace(pattern, replacement), text);
}
