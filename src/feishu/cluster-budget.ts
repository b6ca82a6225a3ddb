import { type BudgetShare, createBudgetShare, type Share } from "../cluster/budget.ts";
import type { Logger } from "../logger.ts";
import type { FeishuCluster } from "./cluster-options.ts";
import {
  type AppLimits,
  createAppLimiter,
  type Limiter,
  type LimitWindows,
  PLATFORM_WINDOWS,
} from "./limits.ts";

/**
 * The app limiter of one instance among several (issue 27): its limits are this instance's share of the
 * app's 50/s and 1,000/min (src/cluster/budget.ts, from heartbeats), read from memory at each decision, so
 * no Open API call waits for the database. The urgent lane and the agents' share are carved out of the
 * share exactly as out of the whole budget (limits.ts), and Feishu's 99991400 and 230020 stay the authority.
 *
 * Why the smallest share of each window and not the share itself: the windows slide, so calls made under
 * an earlier share are still in them. When a member leaves, the others' shares grow at their next heartbeat,
 * but the leaver's calls of the last minute still count at Feishu; when a member joins, the older members'
 * calls of the last minute, made under their larger shares, still count. Each member keeping, in each
 * window, to the smallest share it held during that window makes the members' counts add up to at most the
 * sum of their shares at one instant, which the budget keeps within the limit. So a share that shrinks
 * applies at once, one that grows once the window has passed: 1 s for the second's limit, 1 min for the
 * minute's.
 *
 * A newcomer's grace (nothing while the older members may not have seen it) would, under that rule, keep
 * its minute's limit at 0 for a whole minute after it: no call, not even the start-up one, for a minute
 * after a deploy. So the grace holds back the second's limit only (for 1 s after it ends), and in its first
 * minute a newcomer keeps the minute's instead to the room the others' published counts leave it (budget.ts
 * roomOf: its share, less what the others may still hold beyond theirs), which is not a share to wait out.
 * A window holding a call that a member made in its first minute is within the limit by roomOf's argument,
 * taken from the newest such member: the others' calls there are bounded by what they published before it
 * read (a member that joined after its read is newer, so has no first-minute call there, and its later ones
 * are too late for ours unless a call of ours stays in flight longer than the grace's extra second, which the
 * grace assumes anyway). Any other window is within it by the smallest-share argument, at an instant after
 * every member's grace: a member past its first minute started its latest call there a minute after its
 * grace. An app whose members were quiet lets a newcomer call a heartbeat or so after its grace; a busy one,
 * once the calls beyond the shares have left the window. A member alone at its first heartbeat takes the
 * whole budget at once, less what members gone within the minute may still hold.
 */
export interface ClusterLimiter {
  limiter: Limiter & { pending(): number };
  budget: BudgetShare;
  /** The limits in force now. */
  limits(): AppLimits;
  /** Gives the share up (nothing more is sent) and leaves the members so the others grow. */
  stop(): Promise<void>;
}

export interface ClusterLimiterOptions {
  cluster: FeishuCluster;
  appId: string;
  now?: () => number;
  /** Told how long each job waited for its turn (for `/metrics`). */
  onWait?: (waitMs: number, urgent: boolean) => void;
  log?: Logger;
  /** The app's whole budget (default the platform's 50 and 1,000). */
  perSecond?: number;
  perMinute?: number;
  /** The limiter's windows (default 1 s and 1 min; tests shorten them). */
  windows?: LimitWindows;
}

/**
 * Whether an instance's limits in force (`limits()`, what its limiter spends by) let it serve the app now: it
 * may make a call this second and this minute. A
 * newcomer in its grace, or one whose room a killed instance's last minute still fills, may not: it leaves runs
 * and stored messages to the others (run-leases.ts, instances.ts), and `/readyz` says so, until it may. Any room
 * counts: an instance with a little can still send a card's form, where one with none sends nothing for a
 * minute.
 */
export function servingShare(limits: AppLimits): boolean {
  return limits.perSecond > 0 && limits.perMinute > 0;
}

export function createClusterLimiter(options: ClusterLimiterOptions): ClusterLimiter {
  const now = options.now ?? Date.now;
  const { windows: clusterWindows, ...heartbeats } = options.cluster.budget ?? {};
  const windows = options.windows ?? clusterWindows ?? PLATFORM_WINDOWS;
  const held = shareWindow(windows, now);
  const timers = new Set<NodeJS.Timeout>();
  const limiter = createAppLimiter({
    limits: held.limits,
    windows,
    now,
    ...(options.onWait ? { onWait: options.onWait } : {}),
  });
  // A grown share applies once each window has passed: wake the limiter then, so a waiting job goes at once.
  const wakeLater = (ms: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      limiter.wake();
    }, ms + 1);
    timer.unref();
    timers.add(timer);
  };
  let logged: Share | undefined;
  const budget = createBudgetShare({
    db: options.cluster.db,
    appId: options.appId,
    member: options.cluster.instance,
    calls: limiter.used,
    minuteMs: windows.minuteMs,
    ...(options.perSecond === undefined ? {} : { perSecond: options.perSecond }),
    ...(options.perMinute === undefined ? {} : { perMinute: options.perMinute }),
    ...heartbeats,
    ...(options.log ? { log: options.log } : {}),
    onChange: (share) => {
      held.record(share);
      // Told when the members or the shares change, not at each heartbeat a newcomer's room grows.
      if (
        share.members !== logged?.members ||
        share.byRank.perMinute !== logged.byRank.perMinute ||
        share.perSecond !== logged.perSecond
      )
        options.log?.info(
          {
            appId: options.appId,
            perSecond: share.perSecond,
            perMinute: share.perMinute,
            members: share.members,
          },
          "app budget share changed",
        );
      logged = share;
      limiter.wake();
      wakeLater(windows.secondMs);
      wakeLater(windows.minuteMs);
    },
  });
  budget.start();
  return {
    limiter,
    budget,
    limits: held.limits,
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      try {
        await budget.stop();
      } catch (error) {
        // Our share is 0 already; the row expires after its TTL and the others grow then.
        options.log?.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "leaving the app budget failed; the heartbeat row expires on its own",
        );
      }
    },
  };
}

/**
 * The shares held over time, and for each window the smallest one held at any moment of it. Nothing is held
 * before the first share is recorded (the budget's first heartbeat: it may not be alone). The second's limit
 * keeps to the smallest share to spend (nothing in a grace); the minute's to the smallest share by rank,
 * and at most the minute's share to spend now (nothing in a grace, the room in a first minute): that one need
 * not be the smallest of the window, as roomOf already counts what the window holds.
 */
export function shareWindow(windows: LimitWindows, now: () => number) {
  const history: { at: number; perSecond: number; perMinute: number }[] = [];
  let minuteNow = 0;
  const prune = (t: number) => {
    // An entry is held until the next one starts; drop those that ended before the minute window.
    while (history.length > 1 && (history[1]?.at ?? 0) <= t - windows.minuteMs) history.shift();
  };
  return {
    record(share: Pick<Share, "perSecond" | "perMinute" | "byRank">): void {
      const t = now();
      history.push({ at: t, perSecond: share.perSecond, perMinute: share.byRank.perMinute });
      minuteNow = share.perMinute;
      prune(t);
    },
    limits(): AppLimits {
      if (history.length === 0) return { perSecond: 0, perMinute: 0 };
      const t = now();
      prune(t);
      let perSecond = Number.POSITIVE_INFINITY;
      let perMinute = minuteNow;
      for (let i = 0; i < history.length; i++) {
        const entry = history[i];
        if (!entry) continue;
        const until = history[i + 1]?.at ?? Number.POSITIVE_INFINITY;
        if (until > t - windows.secondMs) perSecond = Math.min(perSecond, entry.perSecond);
        if (until > t - windows.minuteMs) perMinute = Math.min(perMinute, entry.perMinute);
      }
      return { perSecond, perMinute };
    },
  };
}
