import { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { ModelError } from "../../errors.ts";
import { inEveryLocale, type Strings, strings } from "../../strings/index.ts";

/**
 * What went wrong with one model request, and whether trying again can help. The final error a person
 * sees names the setting to check (OPENAI_API_KEY, OPENAI_MODEL, OPENAI_BASE_URL), not a stack trace.
 */
export interface ModelFailure {
  kind: "aborted" | "timeout" | "unreachable" | "status" | "other";
  retryable: boolean;
  /** The model service's HTTP status, when it answered. */
  status?: number;
  /** Short technical detail (the service's own message, or a network error code). */
  detail: string;
  /** From `retry-after-ms` / `Retry-After`, when the service said how long to wait. */
  retryAfterMs?: number;
}

/** Raised by the stream when nothing arrived for the request timeout (headers or the next chunk). */
export class IdleTimeout extends Error {
  constructor() {
    super("model request idle timeout");
    this.name = "IdleTimeout";
  }
}

/** Network error codes that mean the service could not be reached at all. */
const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

export function classifyModelError(error: unknown, signal: AbortSignal): ModelFailure {
  if (signal.aborted) return { kind: "aborted", retryable: false, detail: "aborted" };
  if (error instanceof IdleTimeout || error instanceof APIConnectionTimeoutError)
    return { kind: "timeout", retryable: true, detail: "timeout" };
  if (error instanceof APIError && typeof error.status === "number") {
    const status = error.status;
    const retryAfterMs = error.headers ? retryAfter(error.headers) : undefined;
    return {
      kind: "status",
      status,
      retryable: status === 408 || status === 409 || status === 429 || status >= 500,
      detail: clip(error.message.replace(/^\d{3}\s*/, "")),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  const code = networkCode(error);
  if (code && UNREACHABLE.has(code)) return { kind: "unreachable", retryable: true, detail: code };
  if (error instanceof APIConnectionError)
    return { kind: "unreachable", retryable: true, detail: code ?? error.message };
  // A stream cut off half-way (undici: "terminated", ECONNRESET) is worth another try.
  const detail = clip(code ?? (error instanceof Error ? error.message : String(error)));
  return { kind: "other", retryable: code !== undefined || detail === "terminated", detail };
}

export function modelErrorFor(
  failure: ModelFailure,
  retries: number,
  context: { baseUrl: string; model: string; requestTimeoutMs: number },
  cause?: unknown,
): ModelError {
  // Worded by each catalogue: the bot's language is the message, every language goes on the card.
  const word = (catalogue: Strings): string => {
    const s = catalogue.model;
    switch (failure.kind) {
      case "timeout":
        return s.timedOut(Math.ceil(context.requestTimeoutMs / 1000), retries);
      case "unreachable":
        return s.unreachable(context.baseUrl, failure.detail);
      case "status":
        return statusMessage(catalogue, failure.status ?? 0, failure.detail, retries, context);
      default:
        return s.other(failure.detail);
    }
  };
  return new ModelError(word(strings), {
    cause,
    words: inEveryLocale(word),
    ...(failure.status === undefined ? {} : { upstreamStatus: failure.status }),
  });
}

function statusMessage(
  catalogue: Strings,
  status: number,
  detail: string,
  retries: number,
  context: { model: string; requestTimeoutMs: number },
): string {
  const s = catalogue.model;
  if (status === 401) return s.unauthorized;
  if (status === 403) return s.forbidden(context.model);
  if (status === 404) return s.notFound(context.model);
  if (status === 408) return s.timedOut(Math.ceil(context.requestTimeoutMs / 1000), retries);
  if (status === 429) return s.rateLimited(retries);
  if (status >= 500) return s.serverError(status, retries);
  return s.rejected(status, detail);
}

/** `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date. */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The first `code` in the error's cause chain (undici nests the socket error one or two levels down). */
function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth += 1) {
    const code: unknown = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z]+$|^UND_ERR/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function clip(text: string, max = 200): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
