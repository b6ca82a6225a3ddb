import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A network path between the bot and the emulator that can hold chosen requests for a while and then
 * deliver them anyway, whether or not the client is still waiting: what a slow platform does with a request
 * it has received but answers late. (The emulator's own delay fault holds a request before reading it, so a
 * client that gave up takes the request with it; this path models the other case.) Loopback only.
 */
export interface SlowPath {
  url: string;
  /** The next `times` requests matching method and path are forwarded only after `delayMs`. */
  hold(match: { method: string; path: RegExp }, delayMs: number, times?: number): void;
  /** Every request as it reached the path (Date.now()), held or not. */
  readonly arrived: { method: string; path: string; at: number }[];
  /** Requests that were held, once delivered: whether the client had given up by then. */
  readonly delivered: { method: string; path: string; heldMs: number; clientGone: boolean }[];
  close(): Promise<void>;
}

export async function startSlowPath(targetUrl: string): Promise<SlowPath> {
  const target = new URL(targetUrl);
  const holds: { method: string; path: RegExp; delayMs: number; remaining: number }[] = [];
  const delivered: SlowPath["delivered"] = [];
  const arrived: SlowPath["arrived"] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      arrived.push({ method: req.method ?? "", path, at: Date.now() });
      const hold = holds.find((h) => h.remaining > 0 && h.method === req.method && h.path.test(path));
      const forward = () => {
        const upstream = request(
          {
            host: target.hostname,
            port: target.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, host: target.host },
          },
          (answer) => {
            if (res.destroyed) {
              answer.resume();
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on("error", () => {
          if (!res.destroyed) res.destroy();
        });
        upstream.end(Buffer.concat(chunks));
      };
      if (!hold) {
        forward();
        return;
      }
      hold.remaining -= 1;
      const timer = setTimeout(() => {
        timers.delete(timer);
        delivered.push({ method: req.method ?? "", path, heldMs: hold.delayMs, clientGone: res.destroyed });
        forward();
      }, hold.delayMs);
      timers.add(timer);
    });
    // A client that gives up closes its socket; the held request is still delivered (see above).
    req.on("error", () => undefined);
    res.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hold(match, delayMs, times = 1) {
      holds.push({ ...match, delayMs, remaining: times });
    },
    arrived,
    delivered,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
