import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { connectAskWakeups } from "./ask-wakeups.ts";
import type { AskRegistry } from "./asks/registry.ts";

import { createClaims } from "./cluster/claims.ts";
import type { Db } from "./cluster/pool.ts";
import { createWakeups, notify, type Wakeups } from "./cluster/wakeups.ts";
import { describeError } from "./errors.ts";
import type { CallbackRelay, EventRelay, FeishuCluster } from "./feishu/cluster-options.ts";
import type { CommandRelay, RunLeases } from "./harness/run-leases.ts";
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
  const wakeups = createWakeups({
    connectionString: database.url,
    channel: WAKEUP_CHANNEL,
    log,
    pollIntervalMs: Math.min(5_000, Math.max(200, Math.floor(ttlMs / 2))),
  });
  const ownership = new AnnouncedRunLeases({
    sql: store.sql,
    instance,
    home,
    log,
    ttlMs,
    renewEveryMs: fifth,
    marginMs: fifth,
    adoptEveryMs: fifth,
    relay: commandRelay(store.pool, wakeups, instance, log),
  });
  let disconnect: (() => Promise<void>) | undefined;
  return {
    instance,
    ownership,
    feishu: {
      db: store.pool,
      instance,
      holder: { ttlMs, renewEveryMs: fifth, marginMs: fifth },
      events: eventRelay(store.pool, wakeups, instance, log),
      callbacks: callbackRelay(store.pool, wakeups, log),
    },
    connect(core) {
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
      await wakeups.close();
      await ownership.close();
    },
  };
}

/**
 * A card's callback answered by an instance that does not run its task: `card-click:<message id>` at its
 * arrival and `card:<message id>` once answered tell the card's instance, which holds its PATCHes in between
 * (feishu/progress/remote-answers.ts). A wake-up lost costs at most the callback's 3 s: no row is needed.
 */
function callbackRelay(db: Db, wakeups: Wakeups, log: Logger): CallbackRelay {
  const send = (topic: string, messageId: string) =>
    notify(db, WAKEUP_CHANNEL, topic, messageId).catch((error: unknown) =>
      log.warn({ err: describeError(error), topic }, "card callback wake-up not sent"),
    );
  return {
    answering: (messageId) => void send("card-click", messageId),
    responded: (messageId) => void send("card", messageId),
    onCallback(listener) {
      const offs = [
        wakeups.subscribe("card-click", (wake) => {
          if (wake.reason === "notify") listener("answering", wake.id);
        }),
        wakeups.subscribe("card", (wake) => {
          if (wake.reason === "notify") listener("responded", wake.id);
        }),
      ];
      return () => {
        for (const off of offs) off();
      };
    },
  };
}

/** A command as another instance may send it: anything else in a work row is logged and dropped. */
const RunCommandSchema = z.object({
  kind: z.enum(["cancel", "replace"]),
  runId: z.string().min(1).max(200),
  sessionId: z.string().min(1).max(500),
  userId: z.string().min(1).max(200),
});

/**
 * A person's 取消 or 取消并处理新消息 that reached an instance that does not run the task (a webhook POST to
 * any instance, or the long connection's holder): a work row addressed to the run (`run-command:<run id>`) and a
 * wake-up naming it. Whichever instance holds the run reads its rows at the wake-up, at each poll (for every run
 * it holds), and so also after it adopts the run from an instance that died before reading them.
 */
function commandRelay(db: Db, wakeups: Wakeups, instance: string, log: Logger): CommandRelay {
  const claims = createClaims(db);
  const kindFor = (runId: string) => `run-command:${runId}`;
  return {
    async send(command) {
      await claims.enqueue(kindFor(command.runId), command);
      await notify(db, WAKEUP_CHANNEL, "command", command.runId).catch((error: unknown) =>
        log.warn({ err: describeError(error) }, "command wake-up not sent; the holder's next poll finds it"),
      );
    },
    listen(deliver, held) {
      let draining: Promise<void> | undefined;
      const drain = async (runIds: string[]) => {
        if (runIds.length === 0) return;
        const items = await claims.claimWork(instance, {
          kinds: runIds.map(kindFor),
          limit: 50,
          claimMs: 10_000,
        });
        for (const item of items) {
          const command = RunCommandSchema.safeParse(item.payload);
          if (!command.success)
            log.warn({ workId: item.id }, "a forwarded run command that is not one: dropped");
          if (!command.success || (await deliver(command.data))) await claims.complete(item);
          else await claims.retry(item, 0);
        }
      };
      wakeups.subscribe("command", (wake) => {
        const runIds = wake.reason === "notify" ? held().filter((id) => id === wake.id) : held();
        if (runIds.length === 0) return;
        draining ??= drain(runIds)
          .catch((error: unknown) =>
            log.warn({ err: describeError(error) }, "forwarded run commands not read"),
          )
          .finally(() => {
            draining = undefined;
          });
        return draining;
      });
    },
  };
}

/** An instance that cannot serve yet takes a stored message only once it has waited this long for the others. */
const EVENT_LEFT_MS = 10_000;
/** A message waits this long for a claimer that died with it before another instance takes it in. */
const EVENT_CLAIM_MS = 30_000;
/** Tries of one stored message before it is dropped (a minute of the store refusing it, at 1 s apart: more). */
const EVENT_ATTEMPTS = 60;
const PRUNE_EVERY_MS = 3_600_000;
const DONE_KEPT_MS = 86_400_000;

/**
 * The long connection's messages (issue 27): its holder stores each as a `cluster_work` row (one per message id,
 * so a redelivery adds none) and acknowledges Feishu once it is durable; every instance of the app claims rows
 * at the wake-up `feishu-message:<app id>` (or its next poll) and takes the message in as a webhook POST would
 * be. A claimer that dies with a row loses it after EVENT_CLAIM_MS and another takes it; taking in twice is
 * harmless (the inbound row decides). A row the store refuses is tried again a second later.
 */
export function eventRelay(db: Db, wakeups: Wakeups, instance: string, log: Logger): EventRelay {
  const claims = createClaims(db);
  const kindFor = (appId: string) => `feishu-message:${appId}`;
  return {
    async hand(appId, data) {
      const messageId = (data as { message?: { message_id?: unknown } }).message?.message_id;
      const dedupeKey =
        typeof messageId === "string" && messageId.length <= 150 ? `${appId}:${messageId}` : undefined;
      await claims.enqueue(kindFor(appId), data, dedupeKey ? { dedupeKey } : {});
      await notify(db, WAKEUP_CHANNEL, "feishu-message", appId).catch((error: unknown) =>
        log.warn({ err: describeError(error) }, "message wake-up not sent; the next poll takes the message"),
      );
    },
    take(appId, take, serving = () => true) {
      let draining: Promise<void> | undefined;
      // An instance that cannot serve takes only what the others left for EVENT_LEFT_MS (none of them may serve).
      const drain = async (leftForMs: number) => {
        for (;;) {
          const items = await claims.claimWork(instance, {
            kinds: [kindFor(appId)],
            limit: 5,
            claimMs: EVENT_CLAIM_MS,
            leftForMs,
          });
          if (items.length === 0) return;
          await Promise.all(
            items.map(async (item) => {
              try {
                await take(item.payload as Record<string, unknown>);
                await claims.complete(item);
              } catch (error) {
                // A message refused this often is not the store being away: it is dropped, loudly.
                if (item.attempt >= EVENT_ATTEMPTS) {
                  log.error(
                    { err: describeError(error), workId: item.id },
                    "stored message dropped after retries",
                  );
                  return claims.complete(item);
                }
                log.warn(
                  { err: describeError(error), workId: item.id },
                  "stored message not taken in; retried",
                );
                await claims.retry(item, 1_000);
              }
            }),
          );
        }
      };
      let pruned = 0;
      return wakeups.subscribe("feishu-message", (wake) => {
        if (wake.reason === "notify" && wake.id !== appId) return;
        // Without its share of the budget yet (a newcomer after a kill), the instances that can serve take the
        // messages at their wake-up; this one at its polls, only what they left (none of them may serve yet).
        const able = serving();
        if (wake.reason === "notify" && !able) return;
        if (wake.reason === "poll" && Date.now() - pruned > PRUNE_EVERY_MS) {
          pruned = Date.now();
          // Done rows are kept a day (a late redelivery still finds its dedupe key), then go.
          claims
            .pruneDone(DONE_KEPT_MS)
            .catch((error: unknown) =>
              log.warn({ err: describeError(error) }, "done work rows not pruned; the next hour tries again"),
            );
        }
        draining ??= drain(able ? 0 : EVENT_LEFT_MS)
          .catch((error: unknown) => log.warn({ err: describeError(error) }, "stored messages not read"))
          .finally(() => {
            draining = undefined;
          });
        return draining;
      });
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
