import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { connectAskWakeups } from "./ask-wakeups.ts";
import type { AskRegistry } from "./asks/registry.ts";
import { createWakeups, type Wakeups } from "./cluster/wakeups.ts";
import type { FeishuCluster } from "./feishu/cluster-options.ts";
import type { RunLeases } from "./harness/run-leases.ts";
import { AnnouncedRunLeases, connectRunWakeups, type RunFeeds } from "./harness/run-wakeups.ts";
import type { Logger } from "./logger.ts";
import type { OpenedStore } from "./store/open.ts";

/**
 * What one instance of several on one Postgres needs beside its store (issue 27, docs/several-instances.md):
 * an id of its own, the leases of the runs it runs (harness/run-leases.ts), the Feishu channel's share of the
 * app (one long connection per app, the budget shared: feishu/cluster-options.ts), and the wake-ups that tell
 * it of an answer given on another instance (ask-wakeups.ts) and show its pages the runs the others run
 * (harness/run-wakeups.ts). On the SQLite file there is none of this: one process is the whole bot.
 */
export interface SeveralInstances {
  /** `host:pid:random:home`, unique among live instances; it names the holder in `cluster_leases`. */
  instance: string;
  ownership: RunLeases;
  feishu: FeishuCluster;
  /** Starts listening for wake-ups, and announces this instance's asks and runs to the others. */
  connect(core: { registry: AskRegistry } & RunFeeds): void;
  close(): Promise<void>;
}

/** One channel per database: a wake-up is an id the receiver re-reads, so another deployment's is harmless. */
export const WAKEUP_CHANNEL = "feishu_progress_bot";

/**
 * `leaseMs` (INSTANCE_LEASE_MS, default 10 s) sets the run leases and the long-connection lease alike: each is
 * renewed every fifth of it and given up locally a fifth before it can expire, and standbys look for what to
 * take over every fifth, so a dead instance's runs and connection are taken over within 1.2 × leaseMs. The
 * asks it waits on are re-read every 5 s whatever the wake-ups say (sooner with a short lease).
 */
export function severalInstances(
  store: OpenedStore,
  config: { dataDir: string; database: { url: string; leaseMs: number } },
  logger: Logger,
): SeveralInstances | undefined {
  if (store.dialect !== "postgres") return undefined;
  const { database } = config;
  const home = homeOf(config.dataDir);
  const instance = `${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}:${home}`;
  const log = logger.child({ module: "instances" });
  const ttlMs = database.leaseMs;
  const fifth = Math.max(100, Math.floor(ttlMs / 5));
  const ownership = new AnnouncedRunLeases({
    sql: store.sql,
    instance,
    home,
    log,
    ttlMs,
    renewEveryMs: fifth,
    marginMs: fifth,
    adoptEveryMs: fifth,
  });
  let wakeups: Wakeups | undefined;
  let disconnect: (() => Promise<void>) | undefined;
  return {
    instance,
    ownership,
    feishu: { db: store.pool, instance, holder: { ttlMs, renewEveryMs: fifth, marginMs: fifth } },
    connect(core) {
      wakeups = createWakeups({
        connectionString: database.url,
        channel: WAKEUP_CHANNEL,
        log,
        pollIntervalMs: Math.min(5_000, Math.max(200, Math.floor(ttlMs / 2))),
      });
      const sending = { db: store.pool, channel: WAKEUP_CHANNEL, log };
      const offAsks = connectAskWakeups(core.registry, wakeups, sending);
      const runs = connectRunWakeups({ ...core, ...sending, leases: ownership, wakeups });
      disconnect = async () => {
        offAsks();
        await runs.close();
      };
      wakeups.start();
    },
    async close() {
      await disconnect?.();
      await wakeups?.close();
      await ownership.close();
    },
  };
}

/**
 * The id of this DATA_DIR, made once and kept in it (`DATA_DIR/instance-home`): what a run whose agent lives on
 * its host (an ACP agent's process and workspace) is pinned to. A restart on the same DATA_DIR is at home; a
 * new container with a fresh volume is not, whatever its hostname.
 */
export function homeOf(dataDir: string): string {
  const file = path.join(dataDir, "instance-home");
  try {
    const kept = fs.readFileSync(file, "utf8").trim();
    if (/^[0-9a-f]{12}$/.test(kept)) return kept;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const made = randomBytes(6).toString("hex");
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, `${made}\n`, { mode: 0o600 });
  return made;
}
