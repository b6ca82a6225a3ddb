import { randomUUID } from "node:crypto";
import { AskRegistry } from "./asks/registry.ts";
import { type JoinedFeed, joinFeeds } from "./domain/run-feed.ts";
import { logActivity } from "./harness/activity-log.ts";
import type { Agent } from "./harness/agents/agent.ts";
import { type AskSurface, ToolDispatcher, type ToolImpl } from "./harness/dispatcher.ts";
import { type RunOwnership, soleOwner } from "./harness/run-ownership.ts";
import { SessionRunner } from "./harness/runner.ts";
import type { Logger } from "./logger.ts";
import { AskStore } from "./store/asks.ts";
import type { Db } from "./store/db.ts";
import { SessionMembers } from "./store/members.ts";
import { Store } from "./store/repos.ts";
import { type StoreSql, sqliteSql } from "./store/sql.ts";
import { StoreTokenRevocations } from "./store/token-revocations.ts";
import { TurnStore } from "./store/turns.ts";
import { WsHub } from "./ws/hub.ts";
import type { WsLimits } from "./ws/limits.ts";

export interface CoreOptions {
  /** The SQLite file (the default store), or `sql` for another (Postgres, several instances). */
  db?: Db;
  sql?: StoreSql;
  logger: Logger;
  agent: Agent;
  tools: ToolImpl[];
  askTimeoutMs: number;
  /** ASK_EXTEND_MAX_MS: what 延长 may add to one ask, from the session page as from the card. */
  askExtendMaxMs?: number;
  authSecret: string;
  now?: () => number;
  newId?: () => string;
  heartbeatIntervalMs?: number;
  /** Queued messages per session at most (QUEUE_MAX); the runner's default when absent. */
  maxQueued?: number;
  /** Overrides of the WebSocket limits (ws/limits.ts). */
  wsLimits?: Partial<WsLimits>;
  /**
   * Which runs are this process's: every run in its store when absent (one process per DATA_DIR); with several
   * instances on one Postgres, the runs whose lease it holds (harness/run-leases.ts).
   */
  ownership?: RunOwnership;
  /** Surfaces besides the WebSocket hub (the Feishu channel adds its card later with `dispatcher.addSurface`). */
  surfaces?: AskSurface[];
}

export interface Core {
  store: Store;
  registry: AskRegistry;
  dispatcher: ToolDispatcher;
  runner: SessionRunner;
  hub: WsHub;
  revocations: StoreTokenRevocations;
  /**
   * Every run this instance runs, the runner's and whatever joins later (agents-api adds its tasks): what the
   * Feishu cards and the activity log follow (domain/run-feed.ts). A card has one writer, its run's instance.
   */
  runs: JoinedFeed;
  /**
   * What the hub and the session pages show: `runs`, and with several instances on one Postgres the others'
   * runs as their wake-ups announce them (harness/remote-runs.ts joins here), so a page sees a run live
   * whichever instance runs it.
   */
  shown: JoinedFeed;
  /** Which runs this process runs (harness/run-ownership.ts): all of them, unless several instances share. */
  ownership: RunOwnership;
}

/** Wires the channel-independent heart of the service; `main.ts` and the tests share it. */
export async function createCore(options: CoreOptions): Promise<Core> {
  const now = options.now ?? Date.now;
  const newId = options.newId ?? randomUUID;
  const onListenerError = (error: unknown, event: string) =>
    options.logger.error({ err: error, event }, "event listener failed");
  const sql = options.sql ?? (options.db ? sqliteSql(options.db) : undefined);
  if (!sql) throw new Error("createCore needs a store: the SQLite file (db) or another (sql)");
  const store = new Store(sql, now, options.db);
  const registry = new AskRegistry({
    timeoutMs: options.askTimeoutMs,
    now,
    newId,
    onListenerError,
    store: new AskStore(sql),
  });
  // Questions asked before a restart are waiting again, with their request ids and deadlines (DESIGN §8).
  await registry.restore();
  const dispatcher = new ToolDispatcher({
    registry,
    tools: options.tools,
    surfaces: options.surfaces ?? [],
    logger: options.logger.child({ module: "dispatcher" }),
  });
  const runner = new SessionRunner({
    store,
    agent: options.agent,
    dispatcher,
    registry,
    turns: new TurnStore(sql, store),
    now,
    newId,
    logger: options.logger.child({ module: "runner" }),
    onListenerError,
    ...(options.maxQueued ? { maxQueued: options.maxQueued } : {}),
    members: new SessionMembers(sql),
    ...(options.ownership ? { ownership: options.ownership } : {}),
  });
  const ownership = options.ownership ?? soleOwner;
  // A run lost to another instance: the call there waits on its asks, and their deadlines are its to keep.
  ownership.onLost((runId) => registry.letGoOfRun(runId));
  // Before any message is taken in: a session whose run a crash interrupted queues until recover() resumes it.
  await runner.prepareRecovery();
  const revocations = new StoreTokenRevocations(sql);
  const runs = joinFeeds(runner);
  const shown = joinFeeds(runs);
  // One info line per task started and finished, question asked and ended, whoever runs or answers it.
  logActivity({ runs, registry, logger: options.logger, now });
  const hub = new WsHub({
    registry,
    runs: shown,
    commands: runner,
    ...(options.askExtendMaxMs !== undefined ? { askTimes: { extendMaxMs: options.askExtendMaxMs } } : {}),
    authSecret: options.authSecret,
    revocations,
    now,
    logger: options.logger.child({ module: "ws" }),
    ...(options.heartbeatIntervalMs ? { heartbeatIntervalMs: options.heartbeatIntervalMs } : {}),
    ...(options.wsLimits ? { limits: options.wsLimits } : {}),
  });
  dispatcher.addSurface(hub);
  return { store, registry, dispatcher, runner, hub, revocations, runs, shown, ownership };
}
