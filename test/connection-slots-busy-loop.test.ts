import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ConnectionSlots } from "../src/web/connection-slots.ts";

/**
 * The first-request bound drops sockets that say nothing (issue 24 item 1), but it must judge what the
 * socket said, not what the bot got round to reading: a bot whose event loop was busy past the bound (a burst
 * of 200 people starting tasks) has the request in its socket buffer, unread, when the timer fires, because
 * timers run before sockets are read. The long load run lost webhooks that way (ECONNRESET).
 */

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

function blockFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // the bot busy with something else: no I/O is read meanwhile
  }
}

async function guardedServer(firstRequestMs: number) {
  const slots = new ConnectionSlots(
    { maxConnections: 100, perAddress: 10, reserve: 10, firstRequestMs },
    { isReserved: () => false },
  );
  const server = http.createServer(
    slots.gate((_req, res) => {
      res.end("ok");
    }),
  );
  slots.attach(server);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { slots, server, port: (server.address() as AddressInfo).port };
}

/** Connects, and once the server has accepted: sends a request, then keeps the loop busy for `blockMs`. */
function requestWhileBusy(
  server: http.Server,
  port: number,
  blockMs: number,
): Promise<{ reply: string; closedEarly: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    let reply = "";
    socket.on("data", (chunk: Buffer) => {
      reply += String(chunk);
      if (reply.includes("ok")) {
        socket.destroy();
        resolve({ reply, closedEarly: false });
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve({ reply, closedEarly: !reply.includes("ok") }));
    // Both ends connected (the server has armed its timer), the request written to the kernel: then busy.
    const accepted = new Promise<void>((done) => server.once("connection", () => done()));
    const connected = new Promise<void>((done) => socket.once("connect", () => done()));
    void Promise.all([accepted, connected]).then(() => {
      socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      blockFor(blockMs);
    });
  });
}

describe("the first-request bound with a busy event loop", () => {
  it("serves a request that arrived in time but was read after the bound, because the bot was busy", async () => {
    const { slots, server, port } = await guardedServer(100);
    const outcome = await requestWhileBusy(server, port, 400);
    expect(outcome.closedEarly).toBe(false);
    expect(outcome.reply).toMatch(/^HTTP\/1\.1 200/);
    expect(slots.stats.silent).toBe(0);
  });

  it("still drops a socket that said nothing by the bound, busy loop or not", async () => {
    const { slots, port } = await guardedServer(100);
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.on("error", () => undefined);
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    await new Promise<void>((resolve) => socket.on("connect", () => resolve()));
    blockFor(300);
    await closed;
    expect(slots.stats.silent).toBe(1);
  });
});
