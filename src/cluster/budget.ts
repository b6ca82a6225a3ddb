import type { Logger } from "../logger.ts";
import { isUnavailable } from "./errors.ts";
import { type Db, query, transaction } from "./pool.ts";

/**
 * The app-wide Open API budget (feishu-platform §3.2: 50/s and 1,000/min per app) split among the live
 * instances of one app, from a heartbeat table (issue 27).
 *
 * Why shares from heartbeats rather than one exact shared window in Postgres: a shared window costs a
 * database round trip (and a row lock every instance contends on) before every Open API call, and stops
 * all sending while Postgres is away; a share is read from memory by the existing limiter
 * (src/feishu/limits.ts), costs one statement per member every heartbeat, and survives an outage with the
 * last share it had. The price is an instance that is idle while another is busy cannot lend it its share;
 * Feishu's own 99991400 and 230020 stay the authority either way.
 *
 * Each live member takes ⌊limit / n⌋, and the remainder goes one each to the first members by id, so the
 * shares add up to exactly the limit. Kept within the limit during changes, as long as members beat on time:
 * - a newcomer takes nothing for its first heartbeat interval plus a second when older members are there
 *   (they have not seen it yet and still spend the old shares);
 * - a member that leaves (stop) gives up its share before it removes its row, so others only grow after;
 * - a member that dies spends nothing; its row expires after `ttlMs` and the others' shares grow.
 * While a heartbeat fails (Postgres away), a member keeps its last share.
 */
export interface Share {
  perSecond: number;
  perMinute: number;
  /** Live members of the app, this one included, at the last heartbeat. */
  members: number;
}

export interface BudgetOptions {
  db: Db;
  appId: string;
  /** This instance's id, unique among the live instances. */
  member: string;
  perSecond?: number;
  perMinute?: number;
  heartbeatEveryMs?: number;
  /** A member whose heartbeat is older than this is gone (default three heartbeats). */
  ttlMs?: number;
  onChange?: (share: Share) => void;
  log?: Logger;
}

export interface BudgetShare {
  /** Beats now and every heartbeatEveryMs. */
  start(): void;
  /** One heartbeat: renews this member, forgets expired ones, recomputes the share. */
  beat(): Promise<Share>;
  /** The share to spend now (nothing until the first heartbeat answers: it may not be alone). */
  share(): Share;
  /** Gives the share up (0 at once), then leaves the table so the others grow. */
  stop(): Promise<void>;
}

/** An arbitrary constant: with the app id's hash, the advisory lock that serialises an app's heartbeats. */
const MEMBERS_LOCK = 27_270_002;

export const BUDGET_DEFAULTS = { heartbeatEveryMs: 2_000, ttlMs: 6_000 } as const;

/** Pure: the share of the member at `rank` (0-based, by member id) among `members`. */
export function shareOf(limit: number, members: number, rank: number): number {
  if (members <= 0) return limit;
  return Math.floor(limit / members) + (rank < limit % members ? 1 : 0);
}

export function createBudgetShare(options: BudgetOptions): BudgetShare {
  const perSecond = options.perSecond ?? 50;
  const perMinute = options.perMinute ?? 1_000;
  const heartbeatEveryMs = options.heartbeatEveryMs ?? BUDGET_DEFAULTS.heartbeatEveryMs;
  const ttlMs = options.ttlMs ?? BUDGET_DEFAULTS.ttlMs;
  if (ttlMs <= heartbeatEveryMs) throw new RangeError("ttlMs must be longer than heartbeatEveryMs");
  const graceMs = heartbeatEveryMs + 1_000;
  const { db, appId, member } = options;

  let current: Share = { perSecond: 0, perMinute: 0, members: 0 };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const set = (next: Share) => {
    const changed =
      next.perSecond !== current.perSecond ||
      next.perMinute !== current.perMinute ||
      next.members !== current.members;
    current = next;
    if (changed) options.onChange?.(next);
  };

  const beat = async (): Promise<Share> => {
    if (stopped) return current;
    // Renew our row (joined_at kept), drop the app's expired rows, read who is alive: one statement, after
    // a lock on the app's members. Without it, two members beating for the first time at the same instant
    // would each miss the other's uncommitted row and both take the whole budget; with it, the second reads
    // after the first committed, and its joined_at (the clock once it holds the lock) is the later one.
    const result = await transaction(db, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [MEMBERS_LOCK, appId]);
      return client.query<{ member: string; newcomer: boolean }>(
        `WITH me AS (
           INSERT INTO cluster_members (app_id, member, joined_at, expires_at)
           VALUES ($1, $2, clock_timestamp(), now() + make_interval(secs => $3::double precision / 1000))
           ON CONFLICT (app_id, member) DO UPDATE SET expires_at = EXCLUDED.expires_at
           RETURNING member, joined_at
         ), gone AS (
           DELETE FROM cluster_members WHERE app_id = $1 AND expires_at <= now() AND member <> $2
         ), others AS (
           SELECT m.member, m.joined_at FROM cluster_members m
            WHERE m.app_id = $1 AND m.expires_at > now() AND m.member <> $2
         )
         SELECT o.member, false AS newcomer FROM others o
         UNION ALL
         SELECT me.member,
                me.joined_at > clock_timestamp() - make_interval(secs => $4::double precision / 1000)
                AND EXISTS (SELECT 1 FROM others o WHERE o.joined_at < me.joined_at)
           FROM me
         ORDER BY member`,
        [appId, member, ttlMs, graceMs],
      );
    });
    if (stopped) return current;
    const members = result.rows.map((row) => row.member);
    const rank = members.indexOf(member);
    // In its grace: joined recently, after members that may not have seen it yet (those that joined later
    // saw it at their first heartbeat). Compared in SQL: the times are the database's, in microseconds (two
    // members a lock apart can join in the same millisecond, which a JavaScript Date cannot tell apart).
    const isNew = result.rows[rank]?.newcomer === true;
    const next = isNew
      ? { perSecond: 0, perMinute: 0, members: members.length }
      : {
          perSecond: shareOf(perSecond, members.length, rank),
          perMinute: shareOf(perMinute, members.length, rank),
          members: members.length,
        };
    set(next);
    return next;
  };

  const loop = () => {
    beat()
      .catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        if (isUnavailable(error))
          options.log?.debug({ err: message }, "budget heartbeat: database unavailable");
        else options.log?.error({ err: message }, "budget heartbeat failed");
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, heartbeatEveryMs);
      });
  };

  return {
    start() {
      if (timer || stopped) return;
      loop();
    },
    beat,
    share: () => current,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      set({ perSecond: 0, perMinute: 0, members: 0 });
      await query(db, "DELETE FROM cluster_members WHERE app_id = $1 AND member = $2", [appId, member]);
    },
  };
}
