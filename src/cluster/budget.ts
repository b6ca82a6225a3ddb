import type { Logger } from "../logger.ts";
import { isUnavailable } from "./errors.ts";
import { type Db, transaction } from "./pool.ts";

/**
 * The app-wide Open API budget (feishu-platform §3.2: 50/s and 1,000/min per app) split among the live
 * instances of one app, from a heartbeat table (issue 27).
 *
 * Why shares from heartbeats rather than one exact shared window in Postgres: a shared window costs a
 * database round trip (and a row lock every instance contends on) before every Open API call, and stops
 * all sending while Postgres is away; a share is read from memory by the existing limiter
 * (src/feishu/limits.ts), costs one transaction per member every heartbeat, and survives an outage with the
 * last share it had. The price is an instance that is idle while another is busy cannot lend it its share;
 * Feishu's own 99991400 and 230020 stay the authority either way.
 *
 * Each live member takes ⌊limit / n⌋, and the remainder goes one each to the first members by id, so the
 * shares add up to exactly the limit. Kept within the limit during changes, as long as members beat on time:
 * - a newcomer takes nothing for its first heartbeat interval plus a second when older members are there
 *   (they have not seen it yet and still spend the old shares);
 * - then, for its first minute, it spends of the minute's share only the room the others' published counts
 *   leave it (roomOf), since their calls of the last minute, made under larger shares, are still in the window;
 * - a member that leaves (stop) gives up its share before it marks its row gone, so others only grow after;
 * - a member that dies spends nothing; its row expires after `ttlMs` and the others' shares grow.
 * A gone row stays a minute more for its count. While a heartbeat fails (Postgres away), a member keeps its
 * last share.
 */
export interface Share {
  /** Calls to spend in a second now: nothing in the grace. */
  perSecond: number;
  /** Calls to spend in a minute now: nothing in the grace, then in the first minute at most the room. */
  perMinute: number;
  /** Live members of the app, this one included, at the last heartbeat. */
  members: number;
  /** This member's shares by rank among them: its own once its grace and first minute are over. */
  byRank: { perSecond: number; perMinute: number };
}

export interface BudgetOptions {
  db: Db;
  appId: string;
  /** This instance's id, unique among the live instances. */
  member: string;
  /**
   * This member's calls in its minute window now, in flight included (its limiter's count: limits.ts
   * used()), published at each heartbeat for newcomers to read.
   */
  calls: () => number;
  perSecond?: number;
  perMinute?: number;
  /** The minute window's length (default the platform's 60 s; tests shorten it). */
  minuteMs?: number;
  heartbeatEveryMs?: number;
  /** A member whose heartbeat is older than this is gone (default three heartbeats). */
  ttlMs?: number;
  onChange?: (share: Share) => void;
  log?: Logger;
}

export interface BudgetShare {
  /** Beats now and every heartbeatEveryMs. */
  start(): void;
  /** One heartbeat: renews this member, publishes its count, forgets old rows, recomputes the share. */
  beat(): Promise<Share>;
  /** The share to spend now (nothing until the first heartbeat answers: it may not be alone). */
  share(): Share;
  /** Gives the share up (0 at once), then marks its row gone with its last count so the others grow. */
  stop(): Promise<void>;
}

/** A row of the app's members as a heartbeat reads it, in member order, this member's own included. */
export interface MemberRow {
  member: string;
  /** Beating; the others left or expired within the last minute, kept for their count. */
  live: boolean;
  /** Its calls in its minute window when it last published (null: never, e.g. a row of an older version). */
  minuteCalls: number | null;
  /** Its minute share by rank then (0 once it left). */
  minuteShare: number | null;
}

/** An arbitrary constant: with the app id's hash, the advisory lock that serialises an app's heartbeats. */
const MEMBERS_LOCK = 27_270_002;

export const BUDGET_DEFAULTS = { heartbeatEveryMs: 2_000, ttlMs: 6_000, minuteMs: 60_000 } as const;

/** Pure: the share of the member at `rank` (0-based, by member id) among `members`. */
export function shareOf(limit: number, members: number, rank: number): number {
  if (members <= 0) return limit;
  return Math.floor(limit / members) + (rank < limit % members ? 1 : 0);
}

/**
 * Pure: how much of its minute share `member` may spend now, in its first minute, from the counts the
 * others published: its share, less what each live member may hold in a window beyond its share, less all
 * a gone member may hold. Nothing while a row has no count (its member's calls are unknown).
 *
 * Why it is safe. A limiter counts a call from its start until a minute after it settles, so all of a
 * member's calls in a window at Feishu (counted on arrival) were in its count when it started its latest one
 * there (limits.ts used()). A member publishes its count C and its share by rank S in the transaction of the
 * heartbeat that computed S, after applying it, and its minute limit never exceeds a share by rank it held
 * within the last minute (cluster-budget.ts): it stays at most S until a minute after its share grows. So in
 * a window ending after the publication it holds at most max(C, S) calls: if it started one after
 * publishing, under a limit of at most S, that call's count held all the window's calls; if not, they are
 * all among the C. This member keeps its own calls of such a window within its room when it started its
 * latest one there, read from publications made before; with s_i the shares it computed for the live others
 * (with its own s they add up to the limit), the window holds at most room + Σ_live max(C_i, S_i) +
 * Σ_gone max(C, S) ≤ s + Σ s_i, since max(x, s) − max(0, x − s) = s.
 *
 * An older member that has not yet seen this one publishes its older, larger share, which leaves no room
 * until its first heartbeat after this member joined: within the grace when it beats on time (because the
 * count follows the shrink in the same transaction; a count sent with the heartbeat's own statement, before
 * its answer, would take one beat more). A member's share grows only after a member goes, and applies a
 * minute later, when the gone member's calls have left the windows; shareOf never shrinks when members go,
 * so the sum holds then with the gone member's term 0.
 */
export function roomOf(perMinute: number, rows: readonly MemberRow[], member: string): number {
  const live = rows.filter((row) => row.live);
  let room = shareOf(
    perMinute,
    live.length,
    live.findIndex((row) => row.member === member),
  );
  for (const row of rows) {
    if (row.member === member) continue;
    if (row.minuteCalls === null || row.minuteShare === null) return 0;
    const holds = Math.max(row.minuteCalls, row.minuteShare);
    room -= row.live ? Math.max(0, holds - shareOf(perMinute, live.length, live.indexOf(row))) : holds;
  }
  return Math.max(0, room);
}

/** The heartbeat's read, after a lock on the app's members (see beat). */
const HEARTBEAT_SQL = `WITH me AS (
   INSERT INTO cluster_members (app_id, member, joined_at, expires_at)
   VALUES ($1, $2, clock_timestamp(), now() + make_interval(secs => $3::double precision / 1000))
   ON CONFLICT (app_id, member) DO UPDATE SET expires_at = EXCLUDED.expires_at,
     joined_at = CASE WHEN cluster_members.expires_at > now() THEN cluster_members.joined_at
                      ELSE EXCLUDED.joined_at END
   RETURNING member, joined_at
 ), forgotten AS (
   DELETE FROM cluster_members
    WHERE app_id = $1 AND member <> $2 AND expires_at <= now() - make_interval(secs => $5::double precision / 1000)
 ), others AS (
   SELECT m.member, m.joined_at, m.expires_at > now() AS live, m.minute_calls, m.minute_share
     FROM cluster_members m
    WHERE m.app_id = $1 AND m.member <> $2 AND m.expires_at > now() - make_interval(secs => $5::double precision / 1000)
 )
 SELECT o.member, o.live, o.minute_calls, o.minute_share, false AS grace, false AS fresh FROM others o
 UNION ALL
 SELECT me.member, true, NULL, NULL,
        me.joined_at > clock_timestamp() - make_interval(secs => $4::double precision / 1000)
        AND EXISTS (SELECT 1 FROM others o WHERE o.live AND o.joined_at < me.joined_at),
        me.joined_at > clock_timestamp() - make_interval(secs => ($4::double precision + $5::double precision) / 1000)
   FROM me
 ORDER BY member`;

interface HeartbeatRow {
  member: string;
  live: boolean;
  minute_calls: number | null;
  minute_share: number | null;
  grace: boolean;
  fresh: boolean;
}

export function createBudgetShare(options: BudgetOptions): BudgetShare {
  const perSecond = options.perSecond ?? 50;
  const perMinute = options.perMinute ?? 1_000;
  const heartbeatEveryMs = options.heartbeatEveryMs ?? BUDGET_DEFAULTS.heartbeatEveryMs;
  const ttlMs = options.ttlMs ?? BUDGET_DEFAULTS.ttlMs;
  const minuteMs = options.minuteMs ?? BUDGET_DEFAULTS.minuteMs;
  if (ttlMs <= heartbeatEveryMs) throw new RangeError("ttlMs must be longer than heartbeatEveryMs");
  if (!(minuteMs > 0)) throw new RangeError("minuteMs must be a positive number of milliseconds");
  const graceMs = heartbeatEveryMs + 1_000;
  const { db, appId, member } = options;

  const none = { perSecond: 0, perMinute: 0 };
  let current: Share = { ...none, members: 0, byRank: none };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const set = (next: Share) => {
    const changed =
      next.perSecond !== current.perSecond ||
      next.perMinute !== current.perMinute ||
      next.members !== current.members ||
      next.byRank.perSecond !== current.byRank.perSecond ||
      next.byRank.perMinute !== current.byRank.perMinute;
    current = next;
    if (changed) options.onChange?.(next);
  };

  const shareFrom = (rows: readonly HeartbeatRow[]): Share => {
    const live = rows.filter((row) => row.live);
    const rank = live.findIndex((row) => row.member === member);
    const byRank = {
      perSecond: shareOf(perSecond, live.length, rank),
      perMinute: shareOf(perMinute, live.length, rank),
    };
    const mine = live[rank];
    if (mine?.grace) return { ...none, members: live.length, byRank };
    if (!mine?.fresh) return { ...byRank, members: live.length, byRank };
    const members = rows.map((row) => ({
      member: row.member,
      live: row.live,
      minuteCalls: row.minute_calls,
      minuteShare: row.minute_share,
    }));
    const room = roomOf(perMinute, members, member);
    return {
      perSecond: byRank.perSecond,
      perMinute: Math.min(byRank.perMinute, room),
      members: live.length,
      byRank,
    };
  };

  const beat = async (): Promise<Share> => {
    if (stopped) return current;
    // Renew our row (joined_at kept while it is live), forget rows gone for a minute, read the rest: one
    // statement, after a lock on the app's members. Without it, two members beating for the first time at the
    // same instant would each miss the other's uncommitted row and both take the whole budget; with it, the
    // second reads after the first committed, and its joined_at (the clock once it holds the lock) is the later.
    // In its grace: joined recently, after live members that may not have seen it yet (those that joined later
    // saw it at their first heartbeat); fresh: in its grace or the minute after. Compared in SQL: the times are
    // the database's, in microseconds (two members a lock apart can join in the same millisecond).
    return transaction(db, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [MEMBERS_LOCK, appId]);
      if (stopped) return current;
      const result = await client.query<HeartbeatRow>(HEARTBEAT_SQL, [
        appId,
        member,
        ttlMs,
        graceMs,
        minuteMs,
      ]);
      if (stopped) return current;
      // Applied before the count is taken, and both published before the lock is released: a newcomer that
      // reads them knows every later call of ours goes under this share (roomOf), and the first heartbeat that
      // sees a newcomer already tells it so.
      const next = shareFrom(result.rows);
      set(next);
      await client.query(
        "UPDATE cluster_members SET minute_calls = $3, minute_share = $4 WHERE app_id = $1 AND member = $2",
        [appId, member, options.calls(), next.byRank.perMinute],
      );
      return next;
    });
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
      set({ ...none, members: 0, byRank: none });
      // Gone from now, with the calls it made still counted for a newcomer until they leave the window (a
      // heartbeat under way finishes first: the lock). The others stop counting it as a member at once.
      await transaction(db, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [MEMBERS_LOCK, appId]);
        await client.query(
          `UPDATE cluster_members SET expires_at = clock_timestamp(), minute_calls = $3, minute_share = 0
            WHERE app_id = $1 AND member = $2`,
          [appId, member, options.calls()],
        );
      });
    },
  };
}
