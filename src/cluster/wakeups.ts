import pg from "pg";
import type { Logger } from "../logger.ts";
import { type Queryable, query } from "./pool.ts";

/**
 * Wake-ups between instances: LISTEN/NOTIFY on one dedicated connection, with a poll as the safety net.
 *
 * A notification carries only a topic and an id (`ask:42`); the receiver re-reads the row, so a wake-up
 * is never the data and a late or repeated one is harmless. NOTIFY is delivered at commit, so a row
 * written in the notifying transaction is there when the receiver looks.
 *
 * A notification is lost while the listening connection is down (Postgres keeps none for a listener that
 * is not connected). So: the connection is re-opened with capped exponential backoff; after each reconnect
 * every subscriber is woken (`reconnect`) to re-read what it waits on; and every `pollIntervalMs` each
 * subscriber is woken (`poll`) whatever happened, and the connection is pinged, so a connection that died
 * without a word (a NAT dropping it) is noticed and a missed notification is seen within one interval.
 */
export type Wake = { reason: "notify"; id: string } | { reason: "poll" } | { reason: "reconnect" };
export type WakeHandler = (wake: Wake) => void | Promise<void>;

export interface WakeupOptions {
  connectionString: string;
  /** The NOTIFY channel (one per deployment; tests use one per test). */
  channel: string;
  pollIntervalMs?: number;
  /** First reconnect delay, doubled on each failure up to `maxBackoffMs` (defaults 100 ms and 5 s). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  connectTimeoutMs?: number;
  log?: Logger;
}

export interface Wakeups {
  /** Opens the connection (retrying in the background if Postgres is not there yet) and starts polling. */
  start(): void;
  /** Calls `handler` for each wake-up of `topic`; returns the unsubscribe. */
  subscribe(topic: string, handler: WakeHandler): () => void;
  /** Whether the listening connection is up and listening now. */
  listening(): boolean;
  /** The listening connection's server process id (for operators' pg_stat_activity, and tests). */
  backendPid(): number | undefined;
  close(): Promise<void>;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
const TOPIC = /^[a-z][a-z0-9_.-]{0,63}$/;
/** NOTIFY payloads must stay under 8000 bytes; an id is far shorter. */
const MAX_ID_LENGTH = 512;

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new RangeError(`wake-up channel must match ${CHANNEL}, got "${channel}"`);
}

function checkTopic(topic: string): void {
  if (!TOPIC.test(topic)) throw new RangeError(`wake-up topic must match ${TOPIC}, got "${topic}"`);
}

/**
 * Sends a wake-up; inside a transaction it goes out at commit (or never, on rollback). Use the caller's
 * pool or transaction client, not the listener's connection.
 */
export async function notify(db: Queryable, channel: string, topic: string, id: string): Promise<void> {
  checkChannel(channel);
  checkTopic(topic);
  if (id.length === 0 || id.length > MAX_ID_LENGTH || /[\r\n]/.test(id)) {
    throw new RangeError(`wake-up id must be 1-${MAX_ID_LENGTH} characters on one line`);
  }
  await query(db, "SELECT pg_notify($1, $2)", [channel, `${topic}:${id}`]);
}

/** A payload from the channel, parsed at the edge: anything else on the channel is ignored. */
function parsePayload(payload: string | undefined): { topic: string; id: string } | undefined {
  if (payload === undefined) return undefined;
  const colon = payload.indexOf(":");
  if (colon < 1) return undefined;
  const topic = payload.slice(0, colon);
  const id = payload.slice(colon + 1);
  if (!TOPIC.test(topic) || id.length === 0 || id.length > MAX_ID_LENGTH) return undefined;
  return { topic, id };
}

export function createWakeups(options: WakeupOptions): Wakeups {
  checkChannel(options.channel);
  const pollIntervalMs = options.pollIntervalMs ?? 5_000;
  const initialBackoffMs = options.initialBackoffMs ?? 100;
  const maxBackoffMs = options.maxBackoffMs ?? 5_000;
  const log = options.log;
  const handlers = new Map<string, Set<WakeHandler>>();
  /** Subscribers whose poll wake is still running: the next poll skips them rather than pile up. */
  const polling = new WeakSet<WakeHandler>();

  let client: pg.Client | undefined;
  let isListening = false;
  let closed = false;
  let started = false;
  let failures = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let pollTimer: NodeJS.Timeout | undefined;
  let everListened = false;
  let pidNow: number | undefined;

  const deliver = (topic: string, wake: Wake) => {
    for (const handler of handlers.get(topic) ?? []) {
      if (wake.reason === "poll") {
        if (polling.has(handler)) continue;
        polling.add(handler);
      }
      // Each handler isolated: a throw (or a rejection) is logged and never reaches the others or us.
      Promise.resolve()
        .then(() => handler(wake))
        .catch((error: unknown) => {
          log?.error(
            { err: error instanceof Error ? error.message : String(error), topic },
            "wake-up handler failed",
          );
        })
        .finally(() => {
          if (wake.reason === "poll") polling.delete(handler);
        });
    }
  };
  const deliverAll = (wake: Wake) => {
    for (const topic of handlers.keys()) deliver(topic, wake);
  };

  const dropConnection = (why: string) => {
    const old = client;
    client = undefined;
    const wasListening = isListening;
    isListening = false;
    if (old) {
      old.removeAllListeners("notification");
      old.end().catch(() => undefined);
    }
    if (closed) return;
    // The first retry after a drop waits too: a server that just killed us is often restarting.
    if (wasListening) failures = Math.max(failures, 1);
    if (wasListening) log?.warn({ why }, "wake-up connection lost, reconnecting");
    scheduleConnect();
  };

  const scheduleConnect = () => {
    if (closed || reconnectTimer || client) return;
    const base = Math.min(maxBackoffMs, initialBackoffMs * 2 ** Math.min(failures, 20));
    // ±20% jitter so instances that lost the same server do not all knock at the same instant.
    const delayMs = failures === 0 ? 0 : Math.round(base * (0.8 + Math.random() * 0.4));
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void connect();
    }, delayMs);
  };

  const connect = async () => {
    if (closed) return;
    const next = new pg.Client({
      connectionString: options.connectionString,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000,
      application_name: "feishu-progress-bot wake-ups",
      keepAlive: true,
    });
    client = next;
    let failed = false;
    const fail = (error: Error) => {
      if (failed || client !== next) return;
      failed = true;
      dropConnection(error.message);
    };
    next.on("error", fail);
    next.on("end", () => fail(new Error("connection ended")));
    next.on("notification", (message) => {
      if (message.channel !== options.channel) return;
      const parsed = parsePayload(message.payload);
      if (parsed) deliver(parsed.topic, { reason: "notify", id: parsed.id });
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${options.channel}`);
      const pid = await next.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      pidNow = pid.rows[0]?.pid;
    } catch (error) {
      failures += 1;
      if (client === next && !failed) {
        failed = true;
        log?.debug(
          { err: error instanceof Error ? error.message : String(error), failures },
          "wake-up connect failed",
        );
        dropConnection("connect failed");
      }
      return;
    }
    if (closed || client !== next) {
      await next.end().catch(() => undefined);
      return;
    }
    failures = 0;
    isListening = true;
    if (everListened) {
      log?.info({}, "wake-up connection back");
      deliverAll({ reason: "reconnect" });
    }
    everListened = true;
  };

  const poll = () => {
    deliverAll({ reason: "poll" });
    const current = client;
    if (current && isListening) {
      // A ping that does not answer within the interval means the connection is gone without a word.
      const timeout = setTimeout(() => {
        if (client === current) dropConnection("ping timed out");
      }, pollIntervalMs);
      current
        .query("SELECT 1")
        .catch((error: Error) => {
          if (client === current) dropConnection(error.message);
        })
        .finally(() => clearTimeout(timeout));
    }
  };

  return {
    start() {
      if (started || closed) return;
      started = true;
      scheduleConnect();
      pollTimer = setInterval(poll, pollIntervalMs);
    },
    subscribe(topic, handler) {
      checkTopic(topic);
      let set = handlers.get(topic);
      if (!set) {
        set = new Set();
        handlers.set(topic, set);
      }
      set.add(handler);
      return () => {
        set.delete(handler);
        if (set.size === 0) handlers.delete(topic);
      };
    },
    listening: () => isListening,
    backendPid: () => (isListening ? pidNow : undefined),
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      clearInterval(pollTimer);
      const old = client;
      client = undefined;
      isListening = false;
      await old?.end().catch(() => undefined);
    },
  };
}
