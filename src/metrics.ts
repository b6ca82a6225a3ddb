import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from "prom-client";
import type { AskRegistry } from "./asks/registry.ts";
import type { ConnectionState, FeishuMetrics } from "./feishu/metrics.ts";
import type { Store } from "./store/repos.ts";
import type { WsHub } from "./ws/hub.ts";

/**
 * `/metrics` in Prometheus' text format, through prom-client, on a registry the caller owns: nothing is
 * registered on prom-client's global default registry, so two apps in one process (tests) never collide and
 * importing this file has no effect. Gauges read their figure at scrape time; counters and histograms are fed
 * by the Feishu side through the `FeishuMetrics` port. prom-client's default process metrics (CPU, memory, event
 * loop lag, handles, GC) go on the same registry, next to ours: what an operator's dashboards expect of a Node
 * service.
 */

export interface MetricsSources {
  registry: Pick<AskRegistry, "size">;
  hub: Pick<WsHub, "connectionCount">;
  /** Absent in rigs without a store: then the run and queue gauges are left out. */
  store?: Pick<Store, "runCounts" | "queue">;
}

export interface Metrics {
  registry: Registry;
  feishu: FeishuMetrics;
}

const CONNECTION_STATES: readonly ConnectionState[] = [
  "connecting",
  "ready",
  "reconnecting",
  "failed",
  "closed",
  "standby",
];

export function createMetrics(options: { registry: Registry; sources: MetricsSources }): Metrics {
  const { registry, sources } = options;
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  const patches = new Counter({
    name: "fpb_card_patches_total",
    help: "Progress card PATCH attempts by outcome; rate_limited and failed carry Feishu's code (or the HTTP status).",
    labelNames: ["outcome", "code"] as const,
    registers,
  });
  const callbacks = new Histogram({
    name: "fpb_card_callback_duration_seconds",
    help: "Time to answer a card callback (Feishu reverts the card after 3 s).",
    labelNames: ["outcome"] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5],
    registers,
  });
  const limiterWait = new Histogram({
    name: "fpb_app_limiter_wait_seconds",
    help: "Time an Open API call waited for the app-wide rate budget (50/s, 1000/min).",
    labelNames: ["priority"] as const,
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers,
  });
  const connection = new Gauge({
    name: "fpb_feishu_long_connection_state",
    help: "1 for the long connection's current state (absent in webhook mode).",
    labelNames: ["state"] as const,
    registers,
  });
  new Gauge({
    name: "fpb_pending_asks",
    help: "Questions waiting for an answer.",
    registers,
    collect() {
      this.set(sources.registry.size);
    },
  });
  new Gauge({
    name: "fpb_ws_connections",
    help: "Open WebSocket connections.",
    registers,
    collect() {
      this.set(sources.hub.connectionCount());
    },
  });
  let limiterPending: () => number = () => 0;
  new Gauge({
    name: "fpb_app_limiter_queue",
    help: "Open API calls waiting for the app-wide rate budget now.",
    registers,
    collect() {
      this.set(limiterPending());
    },
  });
  const { store } = sources;
  if (store) {
    new Gauge({
      name: "fpb_runs",
      help: "Runs by state, as stored (running and recovering are live; the rest are totals).",
      labelNames: ["state"] as const,
      registers,
      async collect() {
        for (const [state, count] of Object.entries(await store.runCounts())) this.set({ state }, count);
      },
    });
    new Gauge({
      name: "fpb_queued_messages",
      help: "Messages waiting in a chat's queue behind a running task.",
      registers,
      async collect() {
        this.set(await store.queue.total());
      },
    });
  }

  return {
    registry,
    feishu: {
      patch(outcome, { code, count = 1 } = {}) {
        patches.inc({ outcome, code: code === undefined ? "" : String(code) }, count);
      },
      callback(durationMs, outcome) {
        callbacks.observe({ outcome }, durationMs / 1000);
      },
      limiterWait(waitMs, urgent) {
        limiterWait.observe({ priority: urgent ? "urgent" : "normal" }, waitMs / 1000);
      },
      limiterQueue(pending) {
        limiterPending = pending;
      },
      connection(state) {
        for (const known of CONNECTION_STATES) connection.set({ state: known }, known === state ? 1 : 0);
      },
    },
  };
}
