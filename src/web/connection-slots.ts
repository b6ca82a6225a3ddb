import type { IncomingMessage, RequestListener, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Who may hold the HTTP server's connections (issue 24 item 1). A socket costs a file descriptor from the
 * moment it is accepted, long before it says anything, and Node drops a silent one only at keep-alive or
 * request timeouts that never start: 1,000 sockets that send nothing held every slot, and the bot answered
 * neither Feishu's webhook nor /healthz. So, per socket, from accept:
 *
 * - it is *waiting* until its request headers are complete (and again between keep-alive requests), *busy*
 *   while a request or an upgraded WebSocket runs;
 * - a socket with no complete request within `firstRequestMs` of opening is dropped (Node's own headers
 *   timeout starts only with the first byte);
 * - one client address holds at most `perAddress` sockets, all servers at most `maxConnections`; a new socket
 *   past either takes the place of the one waiting longest (of that address, or of anyone), so idle sockets
 *   cannot lock a real request out, and is refused only when every slot is busy with real work;
 * - busy requests other than the webhook's never take the last `reserve` slots: past that they get 503, so
 *   Feishu's deliveries (and with them the whole bot in webhook mode) keep capacity of their own.
 */

export interface ConnectionSlotLimits {
  maxConnections: number;
  perAddress: number;
  /** Slots only the reserved paths (the webhook) may use once the rest are busy. */
  reserve: number;
  firstRequestMs: number;
}

export interface SlotStats {
  open: number;
  busy: number;
  /** Sockets dropped: past a cap with nothing to evict, evicted for a newer one, or silent too long. */
  refused: number;
  evicted: number;
  silent: number;
  /** Requests answered 503 because only the reserve was left. */
  shed: number;
}

interface Entry {
  address: string;
  busy: boolean;
  /** Reserved-path requests in flight on it do not count against the general pool. */
  reserved: boolean;
  waitingSince: number;
  timer?: ReturnType<typeof setTimeout>;
}

const REFUSED =
  "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 34\r\n" +
  "Connection: close\r\n\r\ntoo many connections, retry later\n";

export class ConnectionSlots {
  readonly #limits: ConnectionSlotLimits;
  readonly #isReserved: (req: IncomingMessage) => boolean;
  readonly #now: () => number;
  /** Insertion order is accept order. */
  readonly #sockets = new Map<Socket, Entry>();
  readonly #byAddress = new Map<string, Set<Socket>>();
  #generalBusy = 0;
  readonly stats: SlotStats = { open: 0, busy: 0, refused: 0, evicted: 0, silent: 0, shed: 0 };

  constructor(
    limits: ConnectionSlotLimits,
    options: { isReserved: (req: IncomingMessage) => boolean; now?: () => number },
  ) {
    this.#limits = limits;
    this.#isReserved = options.isReserved;
    this.#now = options.now ?? Date.now;
  }

  /** Guards `server`: call before it listens; hand its request listener through `gate`. */
  attach(server: Server): void {
    // Node's own cap stays as a backstop one above ours: a socket must be accepted before it can evict another.
    server.maxConnections = this.#limits.maxConnections + 1;
    server.on("connection", (socket: Socket) => this.#accept(socket));
  }

  /**
   * An upgrade (the WebSocket hub) is a long-lived general connection: it is busy until it closes, and the
   * reserve is not for it. False: the caller refuses it.
   */
  admitUpgrade(req: IncomingMessage): boolean {
    const entry = this.#sockets.get(req.socket);
    if (!entry) return false;
    this.#markBusy(entry, false);
    if (this.#generalBusy <= this.#generalPool()) return true;
    this.stats.shed += 1;
    return false;
  }

  gate(app: RequestListener): RequestListener {
    return (req: IncomingMessage, res: ServerResponse) => {
      const entry = this.#sockets.get(req.socket);
      // Refused or evicted while its request was on the way: nothing of it runs.
      if (!entry) {
        req.socket.destroy();
        return;
      }
      const reserved = this.#isReserved(req);
      this.#markBusy(entry, reserved);
      res.once("close", () => this.#markWaiting(entry, reserved));
      if (!reserved && this.#generalBusy > this.#generalPool()) {
        this.stats.shed += 1;
        res.shouldKeepAlive = false;
        res.writeHead(503, { "content-type": "application/json", "retry-after": "1", connection: "close" });
        res.end(JSON.stringify({ error: { code: "UNAVAILABLE", message: "server busy, try again" } }));
        return;
      }
      app(req, res);
    };
  }

  #generalPool(): number {
    return Math.max(1, this.#limits.maxConnections - this.#limits.reserve);
  }

  #accept(socket: Socket): void {
    const address = socket.remoteAddress ?? "unknown";
    const mine = this.#byAddress.get(address);
    if (mine && mine.size >= this.#limits.perAddress && !this.#evictFrom(mine)) return this.#refuse(socket);
    if (this.#sockets.size >= this.#limits.maxConnections && !this.#evictFrom(this.#sockets.keys()))
      return this.#refuse(socket);
    const entry: Entry = { address, busy: false, reserved: false, waitingSince: this.#now() };
    entry.timer = setTimeout(() => {
      // Decided after this turn's input has been read: when the bot was busy past the bound, a request that
      // arrived in time may still sit unread behind this timer, and timers run before sockets are read.
      setImmediate(() => {
        // A request read meanwhile cleared the timer (markBusy), whether or not it is still running.
        if (entry.busy || entry.timer === undefined || !this.#sockets.has(socket)) return;
        this.stats.silent += 1;
        socket.destroy();
      });
    }, this.#limits.firstRequestMs);
    entry.timer.unref?.();
    this.#sockets.set(socket, entry);
    const set = mine ?? new Set<Socket>();
    set.add(socket);
    this.#byAddress.set(address, set);
    this.stats.open = this.#sockets.size;
    socket.once("close", () => this.#forget(socket, entry));
  }

  /** Drops the socket among `candidates` that has waited longest; false when all are busy. */
  #evictFrom(candidates: Iterable<Socket>): boolean {
    let oldest: Socket | undefined;
    let since = Number.POSITIVE_INFINITY;
    for (const socket of candidates) {
      const entry = this.#sockets.get(socket);
      if (entry && !entry.busy && entry.waitingSince < since) {
        oldest = socket;
        since = entry.waitingSince;
      }
    }
    if (!oldest) return false;
    const entry = this.#sockets.get(oldest);
    if (entry) this.#forget(oldest, entry);
    this.stats.evicted += 1;
    oldest.destroy();
    return true;
  }

  #refuse(socket: Socket): void {
    this.stats.refused += 1;
    // A reset on a refused socket must not become an unhandled 'error' event.
    socket.on("error", () => undefined);
    // An answer rather than a reset: a client that already sent its request reads why, and when to retry.
    socket.end(REFUSED);
    setTimeout(() => socket.destroy(), 1_000).unref?.();
  }

  #markBusy(entry: Entry, reserved: boolean): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    if (entry.busy) return;
    entry.busy = true;
    entry.reserved = reserved;
    if (!reserved) this.#generalBusy += 1;
    this.stats.busy += 1;
  }

  #markWaiting(entry: Entry, reserved: boolean): void {
    if (!entry.busy || entry.reserved !== reserved) return;
    entry.busy = false;
    entry.waitingSince = this.#now();
    if (!reserved) this.#generalBusy -= 1;
    this.stats.busy -= 1;
  }

  #forget(socket: Socket, entry: Entry): void {
    if (!this.#sockets.delete(socket)) return;
    if (entry.timer) clearTimeout(entry.timer);
    if (entry.busy) {
      if (!entry.reserved) this.#generalBusy -= 1;
      this.stats.busy -= 1;
      entry.busy = false;
    }
    const set = this.#byAddress.get(entry.address);
    set?.delete(socket);
    if (set?.size === 0) this.#byAddress.delete(entry.address);
    this.stats.open = this.#sockets.size;
  }
}
