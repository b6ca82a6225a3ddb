import { performance } from "node:perf_hooks";
import type { Logger } from "../logger.ts";
import { isUnavailable } from "./errors.ts";
import type { Lease, Leases } from "./leases.ts";

/**
 * One long-connection holder per app (issue 27): Feishu sends each event to one random connection of an app
 * and caps how many an app may open, so of all instances exactly one holds the WebSocket, elected by a lease.
 * The others stand by and take over when the holder dies.
 *
 * The numbers (defaults): TTL 10 s, renewed every 2 s; standbys try to acquire every 2 s. A holder that dies
 * right after a renewal leaves a lease that ends 10 s later, and a standby's next attempt comes at most 2 s
 * after that: re-held within 12 s of the death (plus one query), inside the 15 s the issue asks for, while
 * three renewals in a row may fail (a slow query, a blip) before the holder is at risk.
 *
 * A holder that cannot renew steps down on its own clock before anyone else can step up: each renewal's
 * deadline is measured from when the renewal was *sent* (the database's expiry starts no earlier), minus a
 * `marginMs` of 2 s, on the monotonic clock. So while the database is unreachable from the holder, it closes
 * its connection 8 s after its last good renewal, and a standby cannot take the lease before 10 s. A paused
 * holder (SIGSTOP, a long GC) finds its deadline passed when it wakes and steps down before doing anything;
 * whatever it still writes under its old fence is refused (leases.ts).
 */
export type Demotion = "lost" | "unreachable" | "stopped" | "failed";

export interface HolderOptions {
  leases: Leases;
  /** The lease's name: one per app (`long-connection:<app id>`). */
  name: string;
  /** This instance's id, unique among the live instances. */
  instance: string;
  ttlMs?: number;
  /** How often the holder renews and a standby tries to acquire. */
  renewEveryMs?: number;
  marginMs?: number;
  /** What the lease holds, in log lines (default "long connection"; the app's sweeper says "sweeper"). */
  role?: string;
  /** Open the long connection (a throw releases the lease so another instance tries). */
  onElected: (lease: Lease) => void | Promise<void>;
  /** Close it, at once: another instance may hold the lease soon. */
  onDemoted: (reason: Demotion) => void | Promise<void>;
  log?: Logger;
  /** A monotonic clock in ms (tests). */
  now?: () => number;
}

export interface HolderElection {
  /** Starts electing; resolves once the first round is over (holder, or standing by). */
  start(): Promise<void>;
  /** Steps down (closing first, then releasing the lease so a standby takes over at once) and stops. */
  stop(): Promise<void>;
  isHolder(): boolean;
  lease(): Lease | undefined;
}

export const HOLDER_DEFAULTS = { ttlMs: 10_000, renewEveryMs: 2_000, marginMs: 2_000 } as const;

export function createHolderElection(options: HolderOptions): HolderElection {
  const ttlMs = options.ttlMs ?? HOLDER_DEFAULTS.ttlMs;
  const renewEveryMs = options.renewEveryMs ?? HOLDER_DEFAULTS.renewEveryMs;
  const marginMs = options.marginMs ?? HOLDER_DEFAULTS.marginMs;
  const role = options.role ?? "long connection";
  const holderOf = `${options.role ?? "long-connection"} holder`;
  if (renewEveryMs * 2 + marginMs > ttlMs) {
    throw new RangeError(
      `renewEveryMs ${renewEveryMs} is too long for ttlMs ${ttlMs}: at least two renewals must fit`,
    );
  }
  const now = options.now ?? (() => performance.now());
  const log = options.log;
  const { leases, name, instance } = options;

  let held: Lease | undefined;
  /** On our monotonic clock: when we must have stepped down unless a renewal succeeds first. */
  let deadline = 0;
  let running = false;
  let tickTimer: NodeJS.Timeout | undefined;
  let deadlineTimer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();

  const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

  const demote = async (reason: Demotion) => {
    if (!held) return;
    const lease = held;
    held = undefined;
    clearTimeout(deadlineTimer);
    log?.warn({ lease: name, fence: lease.fence, reason }, `${holderOf} stepping down`);
    try {
      await options.onDemoted(reason);
    } catch (error) {
      log?.error({ err: describe(error) }, `closing the ${role} failed`);
    }
  };

  const holdUntil = (sentAt: number) => {
    deadline = sentAt + ttlMs - marginMs;
    clearTimeout(deadlineTimer);
    deadlineTimer = setTimeout(
      () => {
        if (held && now() >= deadline) void demote("unreachable");
      },
      Math.max(0, deadline - now()),
    );
  };

  const tick = async () => {
    if (!running) return;
    if (held && now() >= deadline) await demote("unreachable");
    const sentAt = now();
    try {
      if (held) {
        const term = held;
        const renewed = await leases.renew(term, ttlMs);
        // Stepped down while the renewal was out (its deadline passed, or stop()): the connection is closed,
        // so a late success must not make us holder again without onElected; the next tick acquires afresh.
        if (!running || held !== term) return;
        if (renewed) {
          held = renewed;
          holdUntil(sentAt);
        } else {
          await demote("lost");
        }
        return;
      }
      const won = await leases.acquire(name, instance, ttlMs);
      if (!won || !running) {
        if (won) await leases.release(won);
        return;
      }
      held = won;
      holdUntil(sentAt);
      log?.info({ lease: name, fence: won.fence }, `${holderOf} elected`);
      try {
        await options.onElected(won);
      } catch (error) {
        log?.error({ err: describe(error) }, `opening the ${role} failed; letting another instance try`);
        await demote("failed");
        await leases.release(won).catch(() => false);
      }
    } catch (error) {
      // An outage: a holder keeps its connection until its deadline (checked above); a standby waits.
      if (!isUnavailable(error)) log?.error({ err: describe(error) }, "lease election failed");
      else log?.debug({ err: describe(error) }, "lease election: database unavailable");
    }
  };

  const loop = () => {
    if (!running) return;
    ticking = tick().finally(() => {
      if (running) tickTimer = setTimeout(loop, renewEveryMs);
    });
  };

  return {
    start() {
      if (running) return ticking;
      running = true;
      loop();
      return ticking;
    },
    async stop() {
      running = false;
      clearTimeout(tickTimer);
      await ticking;
      const lease = held;
      await demote("stopped");
      if (lease) await leases.release(lease).catch(() => false);
    },
    isHolder: () => held !== undefined,
    lease: () => held,
  };
}
