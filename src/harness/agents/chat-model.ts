import { randomInt } from "node:crypto";
import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { ToolDefinition } from "../../domain/types.ts";
import { type RunUsage, tokenCount } from "../../domain/usage.ts";
import type { Logger } from "../../logger.ts";
import { abortReason, sleep } from "../../util/sleep.ts";
import { classifyModelError, IdleTimeout, modelErrorFor } from "./model-errors.ts";

/**
 * One streamed chat completion against any OpenAI-compatible endpoint, with bounded retries.
 * The agent loop and `delegate` share it, so a sub-agent uses the same model, limits and error texts.
 */

export type ChatMessage = ChatCompletionMessageParam;

export interface ModelToolCall {
  id: string;
  name: string;
  /** As the model wrote it: usually JSON, not always. */
  arguments: string;
}

export interface ModelReply {
  text: string;
  toolCalls: ModelToolCall[];
  /** What the service said the request cost (`usage`) and which model answered; a field it left out is absent. */
  usage: RunUsage;
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools: readonly ToolDefinition[];
  signal: AbortSignal;
  /** The reply's text so far, after every delta that adds to it. */
  onText?: (text: string) => void;
}

export interface ChatModel {
  readonly model: string;
  complete(request: ChatRequest): Promise<ModelReply>;
}

export interface ChatModelOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  /** Retries after the first attempt, for 408/409/429/5xx, timeouts and dropped connections. */
  maxRetries?: number;
  /** How long a request may go without a byte (headers or a stream chunk) before it counts as timed out. */
  requestTimeoutMs?: number;
  /** First backoff; doubles per retry (plus jitter). A Retry-After from the server wins. */
  retryBaseMs?: number;
  /** No single wait is longer than this, whatever Retry-After says. */
  maxRetryDelayMs?: number;
  logger: Logger;
}

export function createChatModel(options: ChatModelOptions): ChatModel {
  const maxRetries = options.maxRetries ?? 3;
  const requestTimeoutMs = options.requestTimeoutMs ?? 120_000;
  const retryBaseMs = options.retryBaseMs ?? 1000;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
  const logger = options.logger;
  const client = new OpenAI({
    baseURL: options.baseUrl,
    // Local servers (Ollama, vLLM) need no key, but the SDK insists on one. Every option the SDK would
    // otherwise read from the environment is given: only main.ts reads the environment (and an
    // OPENAI_ADMIN_KEY there must not silently replace the configured key).
    apiKey: options.apiKey ?? "no-key",
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    // Retries are ours: the SDK's cannot be cancelled mid-wait and do not cover a stream that breaks.
    maxRetries: 0,
    timeout: requestTimeoutMs,
    logLevel: "off",
  });
  const context = { baseUrl: options.baseUrl, model: options.model, requestTimeoutMs };

  return {
    model: options.model,
    async complete(request) {
      for (let retry = 0; ; retry += 1) {
        try {
          return await streamOnce(client, options.model, request, requestTimeoutMs);
        } catch (error) {
          const failure = classifyModelError(error, request.signal);
          if (failure.kind === "aborted") throw abortReason(request.signal);
          if (!failure.retryable || retry >= maxRetries) throw modelErrorFor(failure, retry, context, error);
          const backoffMs = retryBaseMs * 2 ** retry * (1 + Math.random() / 4);
          const delayMs = Math.min(failure.retryAfterMs ?? backoffMs, maxRetryDelayMs);
          logger.warn(
            { retry: retry + 1, maxRetries, delayMs, status: failure.status, kind: failure.kind },
            "model request failed, retrying",
          );
          await sleep(delayMs, request.signal);
        }
      }
    },
  };
}

/** The tools as the chat completions API wants them. */
export function toChatTools(tools: readonly ToolDefinition[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

async function streamOnce(
  client: OpenAI,
  model: string,
  request: ChatRequest,
  idleTimeoutMs: number,
): Promise<ModelReply> {
  // Our own controller: the caller's signal cancels it at once, and so does silence longer than the
  // timeout — the SDK's timeout stops at the response headers, a stalled stream would hang forever.
  const controller = new AbortController();
  const onAbort = () => controller.abort(abortReason(request.signal));
  request.signal.addEventListener("abort", onAbort, { once: true });
  if (request.signal.aborted) onAbort();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new IdleTimeout()), idleTimeoutMs);
  };
  try {
    arm();
    const stream = await client.chat.completions.create(
      {
        model,
        messages: request.messages,
        stream: true,
        // The usage comes as one last chunk, with no choices (chat completions API, `stream_options`).
        stream_options: { include_usage: true },
        ...(request.tools.length > 0 ? { tools: toChatTools(request.tools) } : {}),
      },
      { signal: controller.signal },
    );
    let text = "";
    const calls = new Map<number, ModelToolCall>();
    let usage: RunUsage = {};
    for await (const chunk of stream) {
      arm();
      usage = usageOf(chunk, usage);
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        text += delta.content;
        request.onText?.(text);
      }
      for (const part of delta.tool_calls ?? []) {
        const call = calls.get(part.index) ?? { id: "", name: "", arguments: "" };
        if (part.id) call.id = part.id;
        // The name comes whole in the call's first chunk; the arguments come in pieces.
        call.name ||= part.function?.name ?? "";
        call.arguments += part.function?.arguments ?? "";
        calls.set(part.index, call);
      }
    }
    // The SDK ends a stream quietly when its request is aborted: without this a timeout would pass for
    // a complete (truncated) reply.
    if (controller.signal.aborted) throw controller.signal.reason;
    const toolCalls = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ ...call, id: call.id || openAiCallId() }));
    // A service that does not name its model answered with the one asked for.
    return { text, toolCalls, usage: { ...usage, model: usage.model ?? model } };
  } catch (error) {
    throw controller.signal.reason instanceof IdleTimeout && !request.signal.aborted
      ? controller.signal.reason
      : error;
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener("abort", onAbort);
  }
}

/**
 * The request's usage so far, from one streamed chunk: the counts from its `usage` (servers that do not
 * count send none, or `null`), the model from any chunk that names it. Untrusted: only whole, non-negative
 * numbers count (domain/usage.ts tokenCount).
 */
function usageOf(chunk: ChatCompletionChunk, known: RunUsage): RunUsage {
  const next: RunUsage = { ...known };
  if (typeof chunk.model === "string" && chunk.model.trim() !== "") next.model = chunk.model.trim();
  const usage = chunk.usage;
  if (usage) {
    const input = tokenCount(usage.prompt_tokens);
    const output = tokenCount(usage.completion_tokens);
    const cached = tokenCount(usage.prompt_tokens_details?.cached_tokens);
    if (input !== undefined) next.inputTokens = input;
    if (output !== undefined) next.outputTokens = output;
    if (cached !== undefined) next.cachedTokens = cached;
  }
  return next;
}

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/**
 * An id for a call the model streamed without one, in the shape OpenAI gives its own (`call_` and 24
 * letters and digits): a provider that checks ids accepts it when the turn is sent back, and it is unique
 * across the session's turns (`call_0` of every turn would not be).
 */
export function openAiCallId(): string {
  let id = "call_";
  for (let i = 0; i < 24; i += 1) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}
