import type { Server } from "node:http";
import express from "express";
import { until as waitUntil } from "./wait.ts";

/**
 * An OpenAI-compatible chat completions server on 127.0.0.1 that answers from a script: each request takes
 * the next scripted reply (a streamed text and/or tool calls, an HTTP error, or a stream that never ends).
 * It records every request body and whether the client went away before the reply finished.
 */

export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string exactly as given (it may be broken JSON on purpose). */
  arguments: unknown;
}

export type ScriptedReply =
  | {
      /** Sent as one delta per array item. */
      text?: string[];
      toolCalls?: ScriptedToolCall[];
      /** Pause between chunks, so a test can watch the stream arrive. */
      delayMs?: number;
      /** Send the text, then keep the connection open until the client closes it. */
      hang?: boolean;
      /**
       * The request's `usage`, sent as the API does when asked (`stream_options.include_usage`): one last chunk
       * with no choices. Absent: no usage chunk, as from a server that does not count.
       */
      usage?: {
        prompt_tokens?: number;
        completion_tokens?: number;
        prompt_tokens_details?: { cached_tokens?: number };
      };
      /** The `model` every chunk names (default `scripted`). */
      model?: string;
    }
  | { status: number; body?: unknown; headers?: Record<string, string> };

export interface RecordedRequest {
  body: ChatBody;
  headers: Record<string, string | string[] | undefined>;
  /** The client closed the connection before the reply was complete. */
  clientClosed: boolean;
}

export interface ChatBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: {
    role: string;
    content?: string | null;
    tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    tool_call_id?: string;
  }[];
  tools?: { type: string; function: { name: string; description: string; parameters: unknown } }[];
}

type Responder = ScriptedReply | ((request: RecordedRequest) => ScriptedReply);

export interface ScriptedModel {
  /** e.g. http://127.0.0.1:PORT/v1 */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Queues replies, answered in order. */
  script(...replies: Responder[]): void;
  /** Resolves with the `count`-th request (1-based) once it has arrived. */
  request(count: number): Promise<RecordedRequest>;
  /** Resolves once the client has closed the `count`-th request's connection early. */
  clientClosed(count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startScriptedModel(): Promise<ScriptedModel> {
  const queue: Responder[] = [];
  const requests: RecordedRequest[] = [];
  const app = express();
  app.use(express.json({ limit: "5mb" }));
  app.post("/v1/chat/completions", async (req, res) => {
    const record: RecordedRequest = { body: req.body as ChatBody, headers: req.headers, clientClosed: false };
    requests.push(record);
    res.on("close", () => {
      if (!res.writableFinished) record.clientClosed = true;
    });
    const next = queue.shift();
    const reply = typeof next === "function" ? next(record) : next;
    if (!reply) {
      res.status(500).json({ error: { message: `no scripted reply for request ${requests.length}` } });
      return;
    }
    if ("status" in reply) {
      res.status(reply.status).set(reply.headers ?? {});
      res.json(reply.body ?? { error: { message: `scripted ${reply.status}` } });
      return;
    }
    await streamReply(res, reply);
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  const until = (probe: () => boolean, what: string) => waitUntil(probe, what, 8000, 5);

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...replies) => queue.push(...replies),
    async request(count) {
      await until(() => requests.length >= count, `model request #${count}`);
      return requests[count - 1] as RecordedRequest;
    },
    async clientClosed(count) {
      await until(() => requests[count - 1]?.clientClosed === true, `request #${count} to be closed`);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function streamReply(
  res: express.Response,
  reply: Exclude<ScriptedReply, { status: number }>,
): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = async (delta: Record<string, unknown>, finish: string | null = null) => {
    const chunk = {
      id: "chatcmpl-scripted",
      object: "chat.completion.chunk",
      created: 0,
      model: reply.model ?? "scripted",
      choices: [{ index: 0, delta, finish_reason: finish }],
    };
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
  };
  await send({ role: "assistant", content: "" });
  for (const piece of reply.text ?? []) {
    if (res.destroyed) return;
    await send({ content: piece });
  }
  if (reply.hang) return; // the client's abort (or the server's close) ends it
  for (const [index, call] of (reply.toolCalls ?? []).entries()) {
    const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
    // Like the real API: id and name in the first chunk, the arguments in pieces after it.
    await send({
      tool_calls: [
        {
          index,
          id: call.id ?? `call_${index}`,
          type: "function",
          function: { name: call.name, arguments: "" },
        },
      ],
    });
    for (let at = 0; at < args.length; at += 16) {
      await send({ tool_calls: [{ index, function: { arguments: args.slice(at, at + 16) } }] });
    }
  }
  await send({}, reply.toolCalls?.length ? "tool_calls" : "stop");
  if (reply.usage) {
    const chunk = {
      id: "chatcmpl-scripted",
      object: "chat.completion.chunk",
      created: 0,
      model: reply.model ?? "scripted",
      choices: [],
      usage: reply.usage,
    };
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.write("data: [DONE]\n\n");
  res.end();
}
