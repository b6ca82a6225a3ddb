import type { WebSocket } from "ws";

/** Options and observable records of the emulator's long-connection server (docs/long-connection.md). */

export interface LongConnectionOptions {
  /** `ClientConfig` handed out at the endpoint and in every pong, in seconds as on the wire. */
  pingIntervalS?: number;
  reconnectIntervalS?: number;
  reconnectNonceS?: number;
  reconnectCount?: number;
  /**
   * Waits between redeliveries of an event that was not acked with code 200 in time. The platform's
   * documented schedule is 15 s, 5 min, 1 h, 6 h (the default); tests pass short ones.
   */
  redeliveryMs?: readonly number[];
  /** Payloads longer than this many bytes go out as several frames (`sum`/`seq`). Default 4096 (assumed). */
  fragmentBytes?: number;
  /** `type` header of data frames. `"card"` reproduces a subscription not yet in effect: the SDK drops those. */
  frameType?: "event" | "card";
  /** Connections per app (the platform allows 50; the 51st endpoint call gets 1000040350). */
  maxConnections?: number;
  /** Picks which of n online connections gets a delivery (default random, as in cluster mode). */
  pick?: (n: number) => number;
}

/** One long-connection frame or connection event, for the console's API log and for tests. */
export interface FrameRecord {
  /** Emulator clock, ms. */
  at: number;
  /** `out`: emulator → bot; `in`: bot → emulator. */
  direction: "in" | "out";
  connectionId: string;
  kind: "open" | "close" | "ping" | "pong" | "event" | "card" | "ack" | "malformed";
  /** The frame's `message_id` header (data frames and acks). */
  frameId?: string;
  /** The event's `header.event_type` (deliveries). */
  eventType?: string;
  eventId?: string;
  /** Fragment `seq`/`sum` of a data frame. */
  seq?: number;
  sum?: number;
  /** `code` of an ack. */
  code?: number;
  /** An ack that came after the delivery was given up (3 s). */
  late?: boolean;
  /** Delivery attempt, 1 for the first (redeliveries count up). */
  attempt?: number;
  bytes: number;
  /** Ack: time since the delivery went out. */
  durationMs?: number;
  detail?: string;
}

/** What a delivery over the long connection came to: the ack (`status` is its code) and its decoded data. */
export interface AckResult {
  status: number;
  /** The JSON the bot's handler returned (base64 `data` decoded), or "" for an ack without data. */
  body: unknown;
  durationMs: number;
  connectionId: string;
}

/** A bot connected over the long connection: its socket, and the service and frame sequence it speaks. */
export interface Connection {
  id: string;
  socket: WebSocket;
  service: number;
  seq: number;
  /**
   * The client has pinged: only then is it online for deliveries. The SDK's WSClient adds its frame listener
   * a few microtasks after the socket's 'open' (after its first ping), so a frame that arrives in the same
   * read as the upgrade's 101 is dropped by the SDK unseen; Feishu redelivers an unacked event later
   * (docs/feishu-platform.md, the long connection). Delivering only after the first ping keeps tests from
   * timing that race instead of the bot.
   */
  greeted: boolean;
}
