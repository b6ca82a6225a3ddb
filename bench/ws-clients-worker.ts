import { WebSocket } from "ws";
import { serveWorker } from "./worker.ts";

/**
 * Worker side of the scale benchmark: thousands of WebSocket clients, each signed in as its own user and
 * subscribed to its session. Kept out of the server's thread so that the server's heap is measured alone.
 */

export type WsRequest =
  | { op: "connect"; url: string; clients: { token: string; sessionId: string }[]; asksPerClient: number }
  | { op: "reconnect"; indices: number[]; concurrency: number }
  | { op: "frames" }
  | { op: "close" };

export interface WsResponse {
  ms: number;
  /** Per client: from `subscribe` sent until its last pending ask arrived. */
  subscribeToAsksMs: number[];
  /** Per client: from opening the new connection until its last pending ask arrived. */
  reconnectToAsksMs: number[];
  frames: Record<string, number>;
}

interface Client {
  token: string;
  sessionId: string;
  ws?: WebSocket;
}

let url = "";
let asksPerClient = 0;
let clients: Client[] = [];
const frames: Record<string, number> = {};

/** Opens a client's connection, subscribes, and resolves once all its pending asks have arrived. */
function open(client: Client): Promise<{ subscribeToAsksMs: number; reconnectToAsksMs: number }> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}?token=${encodeURIComponent(client.token)}`);
    client.ws = ws;
    let subscribedAt = 0;
    let asks = 0;
    ws.on("open", () => {
      subscribedAt = performance.now();
      ws.send(JSON.stringify({ type: "subscribe", sessionId: client.sessionId }));
    });
    ws.on("message", (data) => {
      const type = String((JSON.parse(String(data)) as { type?: unknown }).type);
      frames[type] = (frames[type] ?? 0) + 1;
      if (type !== "ask_user_questions" || ++asks !== asksPerClient) return;
      const now = performance.now();
      resolve({ subscribeToAsksMs: now - subscribedAt, reconnectToAsksMs: now - startedAt });
    });
    ws.once("error", reject);
  });
}

async function pool<T>(items: readonly T[], concurrency: number, run: (item: T) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await run(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

function closeAndWait(ws: WebSocket | undefined): Promise<void> {
  if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    ws.once("close", () => resolve());
    ws.close();
  });
}

serveWorker<WsRequest, WsResponse>(async (request) => {
  const startedAt = performance.now();
  const result: WsResponse = { ms: 0, subscribeToAsksMs: [], reconnectToAsksMs: [], frames };
  const record = (r: { subscribeToAsksMs: number; reconnectToAsksMs: number }) => {
    result.subscribeToAsksMs.push(r.subscribeToAsksMs);
    result.reconnectToAsksMs.push(r.reconnectToAsksMs);
  };
  switch (request.op) {
    case "connect":
      url = request.url;
      asksPerClient = request.asksPerClient;
      clients = request.clients.map((c) => ({ ...c }));
      await pool(clients, 200, async (client) => record(await open(client)));
      break;
    case "reconnect": {
      const chosen = request.indices.map((i) => clients[i] as Client);
      // A dropped connection, then the client comes back: the hub must re-send every pending ask.
      await Promise.all(chosen.map((client) => closeAndWait(client.ws)));
      const reconnectStartedAt = performance.now();
      await pool(chosen, request.concurrency, async (client) => record(await open(client)));
      result.ms = performance.now() - reconnectStartedAt;
      return result;
    }
    case "frames":
      break;
    case "close":
      await Promise.all(clients.map((client) => closeAndWait(client.ws)));
      break;
  }
  result.ms = performance.now() - startedAt;
  return result;
});
