import { randomBytes } from "node:crypto";
import { z } from "zod";
import { parseJson } from "../../../util/json.ts";
import type { Frame } from "./frame.ts";
import { METHOD } from "./frame.ts";
import type { AckResult, Connection, FrameRecord } from "./types.ts";

/**
 * Events and callbacks as data frames, and the acks that answer them (docs/long-connection.md §Delivery).
 * Each delivery goes to one online connection (cluster mode), split into `sum` frames when large; the bot
 * has 3 s to ack. A callback that is not acked with its answer in time has failed for good (the user sees
 * an error); an event is redelivered on the platform's schedule, to whichever connection is picked then.
 */

export const ACK_DEADLINE_MS = 3000;
const CALLBACK = "card.action.trigger";

/** A delivery that got no ack in time: the same name as fetch's timeout, so callers treat both alike. */
export class AckTimeoutError extends Error {
  override readonly name = "TimeoutError";
}

/** No connection was online, or the one picked closed before it acked. */
export class NotDeliveredError extends Error {
  override readonly name = "NotDeliveredError";
}

const ackPayload = z.object({ code: z.number().int(), data: z.string().optional() });
const envelope = z.object({
  header: z.object({ event_id: z.string().optional(), event_type: z.string().optional() }).optional(),
});

interface Pending {
  connectionId: string;
  started: number;
  attempt: number;
  settle(result: AckResult | Error): void;
}

export interface DeliveriesDeps {
  /** The connections online for deliveries (those that have pinged: Connection.greeted). */
  connections(): Connection[];
  /** Connections open but not greeted yet, and a wait (at most `ms`) for the next one to greet. */
  opening(): number;
  greeting(ms: number): Promise<void>;
  send(connection: Connection, frame: Frame): void;
  record(record: Omit<FrameRecord, "at">): void;
  now(): number;
  redeliveryMs: readonly number[];
  fragmentBytes: number;
  frameType: "event" | "card";
  pick(n: number): number;
}

export interface DeliverOptions {
  /** Give up on the ack after this long (default 3 s, the platform's limit). */
  timeoutMs?: number;
  /** Split into exactly this many frames (default: by `fragmentBytes`). */
  fragments?: number;
  /** Send the fragments last-first, as a network may reorder them. */
  reverse?: boolean;
  /** Fragments (by `seq`) that are lost on the way: the client can never reassemble the payload. */
  lose?: readonly number[];
}

/** How long a delivery waits for a just-opened connection's first ping. */
const GREETING_WAIT_MS = 2_000;

export class Deliveries {
  readonly #deps: DeliveriesDeps;
  readonly #pending = new Map<string, Pending>();
  readonly #retries = new Set<NodeJS.Timeout>();
  #closed = false;
  #acksToLose = 0;

  constructor(deps: DeliveriesDeps) {
    this.#deps = deps;
  }

  /** Redeliveries scheduled and not yet sent. */
  get scheduledRedeliveries(): number {
    return this.#retries.size;
  }

  /** Sends a schema-2.0 envelope and resolves with the bot's ack, or rejects (timeout, nobody online). */
  deliver(payload: unknown, options: DeliverOptions = {}, attempt = 1): Promise<AckResult> {
    const meta = envelope.safeParse(payload);
    const eventType = meta.success ? meta.data.header?.event_type : undefined;
    const eventId = meta.success ? meta.data.header?.event_id : undefined;
    const isEvent = eventType !== CALLBACK;
    const outcome = this.#send(payload, options, attempt, { eventType, eventId });
    // Only events come again: "回调是同步操作，不提供补推机制" (callbacks are never re-sent).
    return outcome.then(
      (result) => {
        if (isEvent && result.status !== 200) this.#redeliver(payload, attempt);
        return result;
      },
      (error: unknown) => {
        if (isEvent) this.#redeliver(payload, attempt);
        throw error;
      },
    );
  }

  /** The next `count` acks are lost on the way (a fault for tests): their deliveries time out. */
  loseAcks(count: number): void {
    this.#acksToLose = count;
  }

  /** An ack (a data frame from the client): settles its delivery, or is logged as late. */
  ack(connectionId: string, frame: Frame, bytes: number): void {
    const frameId = frame.headers.message_id ?? "";
    if (this.#acksToLose > 0) {
      this.#acksToLose -= 1;
      this.#deps.record({
        direction: "in",
        connectionId,
        kind: "ack",
        frameId,
        bytes,
        detail: "lost (injected)",
      });
      return;
    }
    const pending = this.#pending.get(frameId);
    const parsed = ackPayload.safeParse(payloadJson(frame.payload));
    const base = { direction: "in" as const, connectionId, kind: "ack" as const, frameId, bytes };
    if (!parsed.success) {
      this.#deps.record({ ...base, kind: "malformed", detail: "ack payload is not {code, data?}" });
      return;
    }
    const durationMs = pending ? round(performance.now() - pending.started) : undefined;
    this.#deps.record({
      ...base,
      code: parsed.data.code,
      ...(pending ? { attempt: pending.attempt } : { late: true }),
      ...(durationMs !== undefined ? { durationMs } : {}),
    });
    if (!pending) return;
    this.#pending.delete(frameId);
    const data = parsed.data.data;
    let body: unknown = "";
    if (data !== undefined && data !== "") {
      const decoded = payloadJson(Buffer.from(data, "base64"));
      body = decoded === undefined ? Buffer.from(data, "base64").toString("utf8") : decoded;
    }
    pending.settle({ status: parsed.data.code, body, durationMs: durationMs ?? 0, connectionId });
  }

  /** The connection closed: what it had not acked has failed now (events will come again). */
  connectionLost(connectionId: string): void {
    for (const [frameId, pending] of this.#pending) {
      if (pending.connectionId !== connectionId) continue;
      this.#pending.delete(frameId);
      pending.settle(new NotDeliveredError("the long connection closed before the ack"));
    }
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#retries) clearTimeout(timer);
    this.#retries.clear();
    for (const pending of this.#pending.values()) pending.settle(new NotDeliveredError("emulator closed"));
    this.#pending.clear();
  }

  #send(
    payload: unknown,
    options: DeliverOptions,
    attempt: number,
    meta: { eventType: string | undefined; eventId: string | undefined },
  ): Promise<AckResult> {
    // A connection that is open but has not pinged yet is held for, as the platform holds an event for a
    // connection it is setting up, rather than refused as none.
    if (!this.#closed && this.#deps.connections().length === 0 && this.#deps.opening() > 0)
      return this.#deps.greeting(GREETING_WAIT_MS).then(() => this.#sendNow(payload, options, attempt, meta));
    return this.#sendNow(payload, options, attempt, meta);
  }

  #sendNow(
    payload: unknown,
    options: DeliverOptions,
    attempt: number,
    meta: { eventType: string | undefined; eventId: string | undefined },
  ): Promise<AckResult> {
    const online = this.#deps.connections();
    if (this.#closed || online.length === 0)
      return Promise.reject(new NotDeliveredError("no long connection is online"));
    const connection = online[Math.min(online.length - 1, Math.max(0, this.#deps.pick(online.length)))];
    if (!connection) return Promise.reject(new NotDeliveredError("no long connection is online"));
    const frameId = randomBytes(10).toString("hex");
    const bytes = new TextEncoder().encode(JSON.stringify(payload));
    const parts = split(bytes, options.fragments ?? Math.ceil(bytes.length / this.#deps.fragmentBytes));
    const traceId = randomBytes(8).toString("hex");
    const timeoutMs = options.timeoutMs ?? ACK_DEADLINE_MS;
    return new Promise<AckResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!this.#pending.delete(frameId)) return;
        reject(new AckTimeoutError(`no ack within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(frameId, {
        connectionId: connection.id,
        started: performance.now(),
        attempt,
        settle: (result) => {
          clearTimeout(timer);
          if (result instanceof Error) reject(result);
          else resolve(result);
        },
      });
      const order = parts.map((part, seq) => ({ part, seq }));
      if (options.reverse) order.reverse();
      for (const { part, seq } of order) {
        if (options.lose?.includes(seq)) continue;
        connection.seq += 1;
        const headers = {
          type: this.#deps.frameType,
          message_id: frameId,
          sum: String(parts.length),
          seq: String(seq),
          trace_id: traceId,
          timestamp: String(this.#deps.now()),
        };
        this.#deps.send(connection, {
          SeqID: connection.seq,
          LogID: Number.parseInt(traceId.slice(0, 12), 16),
          service: connection.service,
          method: METHOD.data,
          headers,
          payload: part,
        });
        this.#deps.record({
          direction: "out",
          connectionId: connection.id,
          kind: this.#deps.frameType,
          frameId,
          ...(meta.eventType ? { eventType: meta.eventType } : {}),
          ...(meta.eventId ? { eventId: meta.eventId } : {}),
          seq,
          sum: parts.length,
          attempt,
          bytes: part.length,
        });
      }
    });
  }

  #redeliver(payload: unknown, attempt: number): void {
    const waitMs = this.#deps.redeliveryMs[attempt - 1];
    if (waitMs === undefined || this.#closed) return;
    const timer = setTimeout(() => {
      this.#retries.delete(timer);
      // The outcome of a redelivery is visible in the frame log; nobody awaits it.
      this.deliver(payload, {}, attempt + 1).catch((error: unknown) =>
        this.#deps.record({
          direction: "out",
          connectionId: "",
          kind: "event",
          attempt: attempt + 1,
          bytes: 0,
          detail: error instanceof Error ? error.message : String(error),
        }),
      );
    }, waitMs);
    timer.unref();
    this.#retries.add(timer);
  }
}

/** Splits bytes into `count` nearly equal, non-empty parts (at least one). */
function split(bytes: Uint8Array, count: number): Uint8Array[] {
  const n = Math.max(1, Math.min(count, bytes.length));
  const size = Math.ceil(bytes.length / n);
  const parts: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return parts.length > 0 ? parts : [bytes];
}

/** A frame's payload as JSON (undefined when empty or not JSON). */
function payloadJson(bytes: Uint8Array | undefined): unknown {
  if (!bytes || bytes.length === 0) return undefined;
  return parseJson(Buffer.from(bytes).toString("utf8"));
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
