import http from "node:http";

/**
 * A scripted stand-in for Anthropic's Messages API (SSE streaming), enough for Claude Code to run against it
 * offline. The conversation's turns (streamed, with tools) take the script's replies in order; Claude Code's
 * side requests (token counting, its one-token probes, haiku titles) get a short text and use up nothing.
 */

export type AnthropicReply = { text: string } | { toolUse: { name: string; input: Record<string, unknown> } };

export interface ScriptedAnthropic {
  url: string;
  /** Bodies of the conversation's turns, in order. */
  turns: { messages: unknown[] }[];
  close(): Promise<void>;
}

interface MessagesBody {
  model?: string;
  stream?: boolean;
  max_tokens?: number;
  messages?: unknown[];
}

function parse(body: string): MessagesBody {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === "object" && value !== null ? value : {};
  } catch (error) {
    return { messages: [String(error)] };
  }
}

export async function startScriptedAnthropic(script: AnthropicReply[]): Promise<ScriptedAnthropic> {
  const queue = [...script];
  const turns: { messages: unknown[] }[] = [];
  let ids = 0;
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += String(chunk);
    });
    req.on("end", () => {
      const body = parse(text);
      if (req.url?.startsWith("/v1/messages/count_tokens")) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      if (!req.url?.startsWith("/v1/messages")) {
        res.writeHead(404, { "content-type": "application/json" }).end("{}");
        return;
      }
      const turn = body.stream === true && (body.max_tokens ?? 0) > 1 && !body.model?.includes("haiku");
      const reply: AnthropicReply = turn ? (queue.shift() ?? { text: "(script ended)" }) : { text: "ok" };
      if (turn) turns.push({ messages: body.messages ?? [] });
      const id = `msg_${++ids}`;
      if (body.stream !== true) {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            id,
            type: "message",
            role: "assistant",
            model: body.model,
            content: [{ type: "text", text: "text" in reply ? reply.text : "ok" }],
            stop_reason: "end_turn",
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 1 },
          }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const event = (type: string, data: Record<string, unknown>) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      event("message_start", {
        message: {
          id,
          type: "message",
          role: "assistant",
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 0 },
        },
      });
      if ("text" in reply) {
        event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
        event("content_block_delta", { index: 0, delta: { type: "text_delta", text: reply.text } });
      } else {
        event("content_block_start", {
          index: 0,
          content_block: { type: "tool_use", id: `toolu_${ids}`, name: reply.toolUse.name, input: {} },
        });
        event("content_block_delta", {
          index: 0,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(reply.toolUse.input) },
        });
      }
      event("content_block_stop", { index: 0 });
      event("message_delta", {
        delta: { stop_reason: "text" in reply ? "end_turn" : "tool_use", stop_sequence: null },
        usage: { output_tokens: 5 },
      });
      event("message_stop", {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    turns,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
