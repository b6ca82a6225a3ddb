import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createAgentsApi } from "../../src/agents-api/index.ts";
import type { RequestRates } from "../../src/agents-api/request-rate.ts";
import type { AgentTasks } from "../../src/agents-api/service.ts";
import { signAgentToken } from "../../src/agents-api/token.ts";
import type { ServerLimits } from "../../src/app.ts";
import type { Card } from "../../src/cards/model.ts";
import type { Emulator } from "../../src/local/emulator/index.ts";
import { createLogger } from "../../src/logger.ts";
import { mountSessionPages } from "../../src/web/session-page.ts";
import { type FeishuRig, startFeishuRig } from "./feishu.ts";

export const SECRET = "test-secret-0123456789-0123456789";
export const ALICE = "ou_alice";
export const BOB = "ou_bob";
export const CAROL = "ou_carol";
export const GROUP = "oc_team";
/** The core's sign-in secret in the Feishu rig (its `connect` signs with it). */
export const RIG_AUTH_SECRET = "test-secret-0123456789";
const NAMES: Record<string, string> = { [ALICE]: "Alice", [BOB]: "Bob", [CAROL]: "Carol" };

export interface AgentsRig extends FeishuRig {
  tasks: AgentTasks;
  token(agent: string, mayAsk: string[], ttlMs?: number): string;
  /** An official MCP client connected to /mcp with `token`. */
  mcp(token: string): Promise<Client>;
  /** The cards the bot sent (not replied) into a chat, oldest first. */
  cardsIn(chatId: string): string[];
}

/** The real app with the agents' API mounted as main.ts mounts it, over the emulator. */
export async function startAgentsRig(
  options: {
    perAgent?: { max: number; windowMs: number };
    perTarget?: { max: number; windowMs: number };
    cardPatchIntervalMs?: number;
    progressIntervalMs?: number;
    /** A restart: the same data dir and emulator as an earlier rig (stopped), its tasks resumed. */
    dataDir?: string;
    emulator?: Emulator;
    /** Also mount the session page and its API (as routes.ts does), with the agents' sessions. */
    sessionPages?: boolean;
    /** Waiting calls per agent and in all (agents-api/wait-slots.ts). */
    waits?: { perAgent?: number; total?: number };
    serverLimits?: Partial<ServerLimits>;
    /** Requests per agent token (agents-api/request-rate.ts). */
    requestRates?: RequestRates;
    /** report_progress coalescing per task (0: every call written and shown, as before issue 24 item 7). */
    stepsCoalesceMs?: number;
  } = {},
): Promise<AgentsRig> {
  let tasks: AgentTasks | undefined;
  const rig = await startFeishuRig({
    cardPatchIntervalMs: options.cardPatchIntervalMs ?? 20,
    ...(options.serverLimits ? { serverLimits: options.serverLimits } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.emulator ? { emulator: options.emulator } : {}),
    routes: ({ core }) => {
      const api = createAgentsApi({
        registry: core.registry,
        db: core.store.db,
        runs: core.runs,
        authSecret: SECRET,
        askTimeoutMs: 60_000,
        now: Date.now,
        logger: createLogger({ level: "silent" }),
        ...(options.requestRates ? { requestRates: options.requestRates } : {}),
        tuning: {
          progressIntervalMs: options.progressIntervalMs ?? 40,
          nameOf: (openId) => NAMES[openId],
          ...(options.perAgent ? { perAgent: options.perAgent } : {}),
          ...(options.perTarget ? { perTarget: options.perTarget } : {}),
          ...(options.waits ? { waits: options.waits } : {}),
          ...(options.stepsCoalesceMs !== undefined ? { stepsCoalesceMs: options.stepsCoalesceMs } : {}),
        },
      });
      tasks = api.tasks;
      const pages = (app: Parameters<typeof api.mount>[0]) =>
        mountSessionPages(app, {
          runs: core.runs,
          authSecret: RIG_AUTH_SECRET,
          now: Date.now,
          logger: createLogger({ level: "silent" }),
        });
      return options.sessionPages ? [pages, api.mount] : [api.mount];
    },
  });
  if (!tasks) throw new Error("agents api not mounted");
  // As main.ts does once it listens: running tasks get their cards back, then ended ones their final states.
  tasks.resume();
  await rig.channel.repairEnded();
  const clients: Client[] = [];
  return {
    ...rig,
    tasks,
    token: (agent, mayAsk, ttlMs = 60_000) =>
      signAgentToken(SECRET, { agent, mayAsk, expiresAt: Date.now() + ttlMs }),
    async mcp(token) {
      const client = new Client({ name: "test-agent", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`${rig.httpUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    cardsIn(chatId) {
      return rig.emulator.messages
        .listMessages()
        .filter((m) => m.chatId === chatId && m.msgType === "interactive" && m.senderType === "app")
        .map((m) => m.messageId);
    },
    async stop() {
      await Promise.all(clients.map((client) => client.close()));
      await rig.stop();
    },
  };
}

/** The callback value of a form's submit button on a card (what Feishu sends back on a click). */
export function submitValue(card: Card, form = "ask0"): Record<string, unknown> {
  const found = JSON.stringify(card).match(new RegExp(`"name":"${form}_submit".*?"value":(\\{[^}]*\\})`));
  if (!found?.[1]) throw new Error(`no submit button for ${form}`);
  const value: unknown = JSON.parse(found[1]);
  if (typeof value !== "object" || value === null) throw new Error("bad value");
  return { ...value };
}

export const QUESTION = {
  question: "Which database should the service use?",
  header: "Database",
  multiSelect: false,
  options: [
    { label: "Postgres", description: "The team runs it already" },
    { label: "SQLite", description: "One file, no server" },
  ],
};
