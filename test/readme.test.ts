import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Express } from "express";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../src/app.ts";
import { loadConfig, type RunnableConfig } from "../src/config.ts";
import { ENV_VARIABLES } from "../src/config-env.ts";
import { createCore } from "../src/core.ts";
import { startFeishuApps } from "../src/feishu/index.ts";
import { PATCH_OUTCOMES } from "../src/feishu/metrics.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import type { Emulator } from "../src/local/emulator/index.ts";
import { startLocalFeishu } from "../src/local/index.ts";
import { createLogger } from "../src/logger.ts";
import { createMetrics } from "../src/metrics.ts";
import { agentRoutes, serviceRoutes } from "../src/routes.ts";
import { openDatabase } from "../src/store/db.ts";
import { StoreStandingPermissions } from "../src/store/permissions.ts";
import type { Store } from "../src/store/repos.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { WS_PATH } from "../src/ws/hub.ts";
import { clientFrameSchema } from "../src/ws/protocol.ts";

/**
 * The README's tables against the code, so they cannot drift: the variables against src/config.ts's schema,
 * the routes against the express app built the way main.ts builds it (local mode mounts everything), the
 * WebSocket frames against src/ws/protocol.ts. A failure names what to add or remove in README.md.
 */

const README = fs.readFileSync(path.resolve(import.meta.dirname, "..", "README.md"), "utf8");

/** Rows (cells, without the header and the divider) of the first table under a `## heading`. */
function tableUnder(heading: string): string[][] {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no "## ${heading}" section`);
  const next = README.indexOf("\n## ", start + 1);
  const section = README.slice(start, next < 0 ? undefined : next);
  const rows = section.split("\n").filter((line) => line.trimStart().startsWith("|"));
  return rows.slice(2).map((row) =>
    row
      .trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((cell) => cell.trim()),
  );
}

/**
 * Rows of every table in the README whose first header cell is `variable`: the Configuration table and the
 * feature sections' own tables (e.g. the ACP agent's variables sit with its section).
 */
function variableTables(): string[][] {
  const rows: string[][] = [];
  const lines = README.split("\n");
  for (let i = 0; i < lines.length; i += 1) {
    const header = lines[i]?.trim() ?? "";
    if (!/^\|\s*variable\s*\|/.test(header)) continue;
    for (let j = i + 2; j < lines.length && (lines[j] ?? "").trimStart().startsWith("|"); j += 1)
      rows.push(
        (lines[j] ?? "")
          .trim()
          .replace(/^\||\|$/g, "")
          .split("|")
          .map((cell) => cell.trim()),
      );
  }
  return rows;
}

const codeSpans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");

/** Both directions of a difference, phrased as what to do in README.md. */
function drift(what: string, documented: string[], actual: string[], where: string): string[] {
  const missing = actual.filter((item) => !documented.includes(item));
  const stale = documented.filter((item) => !actual.includes(item));
  return [
    ...missing.map((item) => `README.md's ${what} table lacks ${item} (${where}): add a row`),
    ...stale.map(
      (item) => `README.md's ${what} table lists ${item}, which ${where} does not have: remove it`,
    ),
  ];
}

// Express keeps its routing table on app.router.stack: a layer per route or mounted router.
const layerSchema = z.object({
  rawPath: z.unknown().optional(),
  route: z
    .object({ path: z.union([z.string(), z.array(z.string())]), methods: z.record(z.string(), z.boolean()) })
    .optional(),
  handle: z.unknown(),
});
/** A router's layers; a router is a function with a `stack`, so zod's object schema does not apply. */
function stackOf(router: unknown): unknown[] | undefined {
  if ((typeof router !== "function" && typeof router !== "object") || router === null) return undefined;
  const stack = z.array(z.unknown()).safeParse(Reflect.get(router, "stack"));
  return stack.success ? stack.data : undefined;
}

function routesOf(stack: unknown[], prefix = ""): string[] {
  return stack.flatMap((entry) => {
    const layer = layerSchema.parse(entry);
    if (layer.route) {
      const { path: routePath, methods } = layer.route;
      const paths = typeof routePath === "string" ? [routePath] : routePath;
      return paths.flatMap((one) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${prefix}${one}`),
      );
    }
    const inner = stackOf(layer.handle);
    if (!inner || typeof layer.rawPath !== "string") return [];
    return routesOf(inner, prefix + layer.rawPath);
  });
}

let app: Express;
let store: Store;
let appId: string;
let close: () => Promise<void>;

beforeAll(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-readme-"));
  const config = loadConfig({ DATA_DIR: dataDir, FEISHU_TRANSPORT: "webhook" });
  if (config.mode !== "local") throw new Error("the README's routes are read in local mode");
  const logger = createLogger({ level: "silent" });
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const core = await createCore({
    db,
    logger,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs: 60_000,
    authSecret: "readme-test-secret-1234-5678-9012-3456",
  });
  const local: { emulator: Emulator; config: RunnableConfig } = await startLocalFeishu(
    config,
    "readme-test-webhook-key",
  );
  // As main.ts starts the apps (feishu/index.ts startFeishuApps): each app's webhook at /feishu/<app id>/events too.
  const feishu = await startFeishuApps({ config: local.config, core, logger, now: Date.now });
  appId = local.config.feishu.appId;
  // The outside agents' API and its console panel, built as main.ts builds them.
  const agents = agentRoutes({
    core,
    store: sqliteSql(db),
    authSecret: "readme-test-secret-1234-5678-9012-3456",
    askTimeoutMs: 60_000,
    now: Date.now,
    logger,
    local: { publicUrl: () => "http://localhost:9" },
  });
  const routes = serviceRoutes({
    feishu,
    core,
    authSecret: "readme-test-secret-1234-5678-9012-3456",
    logger,
    now: Date.now,
    standing: new StoreStandingPermissions(sqliteSql(db)),
    extra: agents.routes,
    local: { emulator: local.emulator, botWebhookUrl: () => "http://127.0.0.1:9/feishu/events" },
  });
  app = createApp({ ...core, logger, routes }).app;
  store = core.store;
  close = async () => {
    await feishu.close();
    await core.hub.close();
    await local.emulator.close();
    db.close();
  };
});
afterAll(async () => close());

describe("README.md", () => {
  it("documents every environment variable src/config-env.ts declares, and no other", () => {
    expect(tableUnder("Configuration").length).toBeGreaterThan(10);
    const documented = variableTables().flatMap((row) =>
      codeSpans(row[0] ?? "").filter((span) => /^[A-Z][A-Z0-9_]+$/.test(span)),
    );
    expect(drift("Configuration", documented, [...ENV_VARIABLES], "src/config.ts")).toEqual([]);
  });

  it("documents every HTTP route the app mounts, and no other", () => {
    const documented = tableUnder("Routes").flatMap((row) =>
      codeSpans(row[0] ?? "").map((span) => span.replace(/\?.*$/, "")),
    );
    // An app's own webhook path is documented with its id as a parameter.
    const actual = [...new Set([...routesOf(stackOf(app.router) ?? []), `GET ${WS_PATH}`])].map((route) =>
      route.replace(`/feishu/${appId}/`, "/feishu/:appId/"),
    );
    expect(actual.length).toBeGreaterThan(10);
    expect(drift("Routes", documented, actual, "the app")).toEqual([]);
  });

  it("documents every metric /metrics exports, and no other", async () => {
    const documented = tableUnder("Metrics").flatMap((row) =>
      codeSpans(row[0] ?? "").map((span) => span.replace(/\{.*$/, "")),
    );
    const registry = new Registry();
    createMetrics({ registry, sources: { registry: { size: 0 }, hub: { connectionCount: () => 0 }, store } });
    // The table lists the bot's own series; prom-client's default process metrics are named in the prose.
    const actual = (await registry.getMetricsAsJSON())
      .map((metric) => metric.name)
      .filter((name) => name.startsWith("fpb_"));
    expect(README).toContain("prom-client's default process metrics");
    expect(actual.length).toBeGreaterThan(5);
    expect(drift("Metrics", documented, actual, "src/metrics.ts")).toEqual([]);
  });

  it("names every card PATCH outcome the publisher counts, and no other", () => {
    const row = tableUnder("Metrics").find((cells) => cells[0]?.includes("fpb_card_patches_total"));
    const documented = codeSpans(row?.[2] ?? "");
    expect(drift("PATCH outcomes", documented, [...PATCH_OUTCOMES], "src/feishu/metrics.ts")).toEqual([]);
  });

  it("documents every WebSocket frame of src/ws/protocol.ts, both ways", () => {
    const rows = tableUnder("WebSocket protocol");
    const documented = (direction: string) =>
      rows
        .filter((row) => row[0] === direction)
        .flatMap((row) => codeSpans(row[1] ?? ""))
        .flatMap((span) => span.split("/").map((type) => type.trim()));
    const clientTypes = clientFrameSchema.options.map((option) => option.shape.type.value);
    // Server frames are a TypeScript union only: read the type names from its source.
    const source = fs.readFileSync(path.resolve(import.meta.dirname, "..", "src/ws/protocol.ts"), "utf8");
    const union = source.slice(source.indexOf("export type ServerFrame"), source.indexOf("export interface"));
    const serverTypes = [...union.matchAll(/type: "([a-z_]+)"/g)].map((m) => m[1] ?? "");
    expect(serverTypes.length).toBeGreaterThan(3);
    expect([
      ...drift(
        "WebSocket (client → server)",
        documented("client → server"),
        clientTypes,
        "src/ws/protocol.ts",
      ),
      ...drift(
        "WebSocket (server → client)",
        documented("server → client"),
        serverTypes,
        "src/ws/protocol.ts",
      ),
    ]).toEqual([]);
  });
});
