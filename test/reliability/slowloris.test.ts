import net from "node:net";
import { describe, expect, it } from "vitest";
import { SERVER_LIMITS, type ServerLimits } from "../../src/app.ts";
import { LONG, record, size, timeoutMs, until } from "./helpers/env.ts";
import { ALICE, stacksForEachTest } from "./helpers/stack.ts";

/**
 * Slow clients against the webhook port: hundreds of connections that send their headers or their body a
 * byte at a time. The server drops them within its request timeout (total, not idle, so trickling does not
 * help), serves the bot's own traffic meanwhile, and never holds more than its connection cap.
 * CI runs short timeouts; the long variant runs production's SERVER_LIMITS.
 */

const { stack, closers } = stacksForEachTest({ askPing: false });

const SHORT: ServerLimits = {
  ...SERVER_LIMITS,
  headersTimeoutMs: 1_000,
  requestTimeoutMs: 1_500,
  keepAliveTimeoutMs: 500,
  checkIntervalMs: 200,
  maxConnections: 1_000,
  firstRequestMs: 1_000,
};
const LIMITS = LONG ? SERVER_LIMITS : SHORT;

interface Slow {
  socket: net.Socket;
  closedAt?: number;
}

/**
 * One slow client: "headers" never finishes its header block, "body" never finishes a declared body. Each
 * comes from one of 50 loopback addresses (all of 127/8 is loopback on Linux): one address alone holds at
 * most its share of the slots (connection-slots.test.ts), and these are about the timeouts and the cap.
 */
function slowClient(port: number, kind: "headers" | "body", i: number): Promise<Slow> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: `127.0.0.${2 + (i % 50)}` });
    const slow: Slow = { socket };
    // The attacker's own pace: one byte every 200 ms, for as long as the server keeps the socket.
    const drip = setInterval(() => socket.write(kind === "headers" ? "x" : "a"), 200);
    socket.on("close", () => {
      clearInterval(drip);
      slow.closedAt = Date.now();
    });
    socket.on("error", () => socket.destroy());
    socket.on("connect", () => {
      socket.write(
        kind === "headers"
          ? "POST /feishu/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
          : "POST /feishu/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
      );
      resolve(slow);
    });
    socket.once("error", reject);
  });
}

describe("slow connections (slowloris)", () => {
  it(
    "300 slow clients are dropped within the request timeout while the bot's own webhooks are served",
    async () => {
      const s = await stack({ serverLimits: LIMITS });
      const port = Number(new URL(s.httpUrl).port);
      const count = 300;
      const openedAt = Date.now();
      const slow = await Promise.all(
        Array.from({ length: count }, (_, i) => slowClient(port, i % 2 === 0 ? "headers" : "body", i)),
      );
      closers.push(async () => {
        for (const { socket } of slow) socket.destroy();
      });

      // Feishu's delivery (signed, through the real webhook) while all 300 hold their sockets.
      const sentAt = Date.now();
      const { messageId, result } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
      const servedInMs = Date.now() - sentAt;
      expect(result.status).toBe(200);
      await s.progressCard(messageId);
      const stillOpen = slow.filter((c) => c.closedAt === undefined).length;

      const bound = LIMITS.requestTimeoutMs + 2 * LIMITS.checkIntervalMs + 1_000;
      await until(() => slow.every((c) => c.closedAt !== undefined), "every slow client dropped", bound);
      const lastClosedMs = Math.max(...slow.map((c) => (c.closedAt ?? Date.now()) - openedAt));
      expect(lastClosedMs).toBeLessThan(bound);
      record("slowloris", { count, stillOpenWhileServed: stillOpen, servedInMs, lastClosedMs, bound });
    },
    timeoutMs(20_000, 60_000),
  );

  it("holds no more than its connection cap, and serves again once the slow ones are dropped", async () => {
    const cap = 50;
    const s = await stack({ serverLimits: { ...SHORT, maxConnections: cap } });
    const port = Number(new URL(s.httpUrl).port);
    const extra = size(10, 100);
    const slow = await Promise.all(
      Array.from({ length: cap + extra }, (_, i) => slowClient(port, "headers", i)),
    );
    closers.push(async () => {
      for (const { socket } of slow) socket.destroy();
    });
    // Every connection past the cap costs one at once, long before any timeout: these all wait (no complete
    // request), so each newcomer takes the place of the one waiting longest.
    const dropped = await until(
      () => {
        const closed = slow.filter((c) => c.closedAt !== undefined).length;
        return closed >= extra ? closed : undefined;
      },
      "the connections past the cap dropped",
      SHORT.headersTimeoutMs / 2,
    );
    expect(dropped).toBe(extra);
    await until(() => slow.every((c) => c.closedAt !== undefined), "the slow ones timed out", 5_000);
    expect((await fetch(`${s.httpUrl}/healthz`)).status).toBe(200);
    record("connection cap", { cap, tried: cap + extra, droppedAtOnce: dropped });
  });
});
