import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";
import { parseMcpConfig } from "../src/harness/agents/mcp/config.ts";
import { startMcpFromConfig } from "../src/harness/agents/mcp/index.ts";
import { createLogger } from "../src/logger.ts";
import { tempDir } from "./helpers/core.ts";
import { EVERYTHING, FILESYSTEM, mcpFrom, stack, startHttpMcpServer } from "./helpers/mcp.ts";
import type { ChatBody } from "./helpers/openai-server.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const everything = { command: process.execPath, args: [EVERYTHING, "stdio"] };
const toolNames = (body: ChatBody) => (body.tools ?? []).map((tool) => tool.function.name);
const toolMessage = (body: ChatBody, id: string) =>
  body.messages.find((message) => message.role === "tool" && message.tool_call_id === id);

describe("MCP tools for the OpenAI agent (MCP_CONFIG, real servers over stdio)", () => {
  it("offers server-everything's tools as everything__tool and hands the model their results", async () => {
    const mcp = await mcpFrom(closers, { everything });
    const { model, run } = await stack(closers, mcp);
    model.script(
      {
        toolCalls: [
          { id: "c_echo", name: "everything__echo", arguments: { message: "你好 MCP" } },
          { id: "c_sum", name: "everything__get-sum", arguments: { a: 2, b: 40 } },
          { id: "c_bad", name: "everything__get-sum", arguments: { a: "two" } },
        ],
      },
      { text: ["好了"] },
    );
    const finished = await run("试试工具");
    expect(finished).toMatchObject({ status: "completed", text: "好了" });

    const first = (await model.request(1)).body;
    expect(toolNames(first)).toEqual(expect.arrayContaining(["everything__echo", "everything__get-sum"]));
    const echo = first.tools?.find((tool) => tool.function.name === "everything__echo");
    // The server's JSON Schema, passed through.
    expect(echo?.function.parameters).toMatchObject({
      type: "object",
      properties: { message: { type: "string" } },
    });
    const second = (await model.request(2)).body;
    expect(toolMessage(second, "c_echo")?.content).toBe("Echo: 你好 MCP");
    expect(toolMessage(second, "c_sum")?.content).toContain("42");
    // The server refuses bad arguments with isError; the model reads it as an error it can fix.
    expect(JSON.parse(toolMessage(second, "c_bad")?.content ?? "{}")).toHaveProperty("error");
    // On the card: one step per call, with its one-line summary; the refused call is a failed step.
    expect(finished.steps.map((step) => [step.tool, step.status])).toEqual([
      ["everything__echo", "done"],
      ["everything__get-sum", "done"],
      ["everything__get-sum", "failed"],
    ]);
    expect(finished.steps[0]?.summary).toBe("Echo: 你好 MCP");
  });

  it("reads a temp directory through server-filesystem, and cannot leave it", async () => {
    const dir = fs.realpathSync(tempDir());
    fs.writeFileSync(path.join(dir, "notes.txt"), "第一行\nsecond line\n");
    const mcp = await mcpFrom(closers, { fs: { command: process.execPath, args: [FILESYSTEM, dir] } });
    const { model, run } = await stack(closers, mcp);
    model.script(
      {
        toolCalls: [
          { id: "c_list", name: "fs__list_directory", arguments: { path: dir } },
          { id: "c_read", name: "fs__read_text_file", arguments: { path: path.join(dir, "notes.txt") } },
          { id: "c_out", name: "fs__read_text_file", arguments: { path: "/etc/hostname" } },
        ],
      },
      { text: ["读完了"] },
    );
    expect(await run("看看文件")).toMatchObject({ status: "completed" });
    const second = (await model.request(2)).body;
    expect(toolMessage(second, "c_list")?.content).toContain("[FILE] notes.txt");
    expect(toolMessage(second, "c_read")?.content).toBe("第一行\nsecond line\n");
    expect(JSON.parse(toolMessage(second, "c_out")?.content ?? "{}").error).toMatch(/denied|outside/i);
  });

  it("leaves out a server that fails to start, names it, and runs with the others", async () => {
    const mcp = await mcpFrom(closers, {
      broken: { command: path.join(tempDir(), "no-such-server") },
      crashes: { command: process.execPath, args: ["-e", "process.exit(3)"] },
      everything,
    });
    expect(mcp.servers.find((server) => server.name === "broken")).toMatchObject({ ok: false, tools: 0 });
    expect(mcp.servers.find((server) => server.name === "crashes")).toMatchObject({ ok: false });
    expect(mcp.servers.find((server) => server.name === "everything")?.ok).toBe(true);
    expect(mcp.tools.every((tool) => tool.definition.name.startsWith("everything__"))).toBe(true);
    const { model, run } = await stack(closers, mcp);
    model.script({ text: ["还活着"] });
    expect(await run("hi")).toMatchObject({ status: "completed", text: "还活着" });
    expect(toolNames((await model.request(1)).body)).toContain("everything__echo");
  });

  it("gives up on a hung tool call after MCP_TOOL_TIMEOUT_MS and tells the model", async () => {
    const mcp = await mcpFrom(closers, { everything }, { MCP_TOOL_TIMEOUT_MS: "300" });
    const { model, run } = await stack(closers, mcp);
    model.script(
      {
        toolCalls: [
          { id: "c_long", name: "everything__trigger-long-running-operation", arguments: { duration: 30 } },
        ],
      },
      { toolCalls: [{ id: "c_echo", name: "everything__echo", arguments: { message: "after" } }] },
      { text: ["超时了"] },
    );
    expect(await run("慢慢来")).toMatchObject({ status: "completed", text: "超时了" });
    expect(JSON.parse(toolMessage((await model.request(2)).body, "c_long")?.content ?? "{}")).toEqual({
      error: "MCP tool everything__trigger-long-running-operation timed out after 300 ms",
    });
    // The server is still usable after a cancelled call.
    expect(toolMessage((await model.request(3)).body, "c_echo")?.content).toBe("Echo: after");
  });
});

describe("MCP tools over Streamable HTTP", () => {
  it("connects by url with the file's headers, calls a tool, and times out a hung one", async () => {
    const http = await startHttpMcpServer();
    closers.push(() => http.close());
    const mcp = await mcpFrom(
      closers,
      { remote: { url: http.url, headers: { Authorization: "Bearer t0ken" } } },
      // Long enough for the quick call on a loaded machine (200 ms timed it out once in a full run).
      { MCP_TOOL_TIMEOUT_MS: "2000" },
    );
    expect(mcp.servers).toEqual([{ name: "remote", ok: true, tools: 2 }]);
    const { model, run } = await stack(closers, mcp);
    model.script(
      {
        toolCalls: [
          { id: "c_add", name: "remote__add", arguments: { a: 1, b: 2 } },
          { id: "c_hang", name: "remote__hang", arguments: {} },
        ],
      },
      { text: ["ok"] },
    );
    expect(await run("算一下")).toMatchObject({ status: "completed" });
    const second = (await model.request(2)).body;
    expect(toolMessage(second, "c_add")?.content).toBe("sum=3");
    expect(JSON.parse(toolMessage(second, "c_hang")?.content ?? "{}")).toEqual({
      error: "MCP tool remote__hang timed out after 2000 ms",
    });
    expect(http.auth.every((header) => header === "Bearer t0ken")).toBe(true);
  });
});

describe("MCP_CONFIG file", () => {
  it("accepts the Claude Desktop / Claude Code format", () => {
    const parsed = parseMcpConfig(
      JSON.stringify({
        mcpServers: {
          fs: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
          remote: {
            type: "http",
            url: "https://mcp.example.com/mcp",
            headers: { Authorization: "Bearer x" },
          },
        },
      }),
      "mcp.json",
    );
    expect(Object.keys(parsed.mcpServers)).toEqual(["fs", "remote"]);
  });

  it.each([
    ["{", /mcp\.json: not valid JSON/],
    [JSON.stringify({ servers: {} }), /unknown field\(s\) servers/],
    [JSON.stringify({ mcpServers: { a: {} } }), /mcpServers\.a: each server needs either command/],
    [JSON.stringify({ mcpServers: { "a b": { command: "x" } } }), /server names must be/],
    [JSON.stringify({ mcpServers: { a__b: { command: "x" } } }), /must not contain __/],
    [JSON.stringify({ mcpServers: { a: { url: "ftp://x" } } }), /mcpServers\.a/],
  ])("refuses %s with a clear error", (text, message) => {
    expect(() => parseMcpConfig(text, "mcp.json")).toThrow(ConfigError);
    expect(() => parseMcpConfig(text, "mcp.json")).toThrow(message);
  });

  it("names a file that cannot be read, and MCP_CONFIG without AGENT=openai", async () => {
    const config = loadConfig({
      AGENT: "openai",
      OPENAI_BASE_URL: "http://127.0.0.1:1/v1",
      OPENAI_MODEL: "m",
      MCP_CONFIG: "/nonexistent/mcp.json",
    });
    await expect(startMcpFromConfig(config, createLogger({ level: "silent" }))).rejects.toThrow(
      /MCP_CONFIG \/nonexistent\/mcp\.json: cannot be read/,
    );
    expect(() => loadConfig({ MCP_CONFIG: "x.json" })).toThrow(/MCP_CONFIG: .*AGENT=openai/);
  });
});
