import { StaleClaimError } from "./errors.ts";
import { type Db, query } from "./pool.ts";

/**
 * Who handles what, when every instance may receive anything (issue 27).
 *
 * Event de-duplication is a unique row: Feishu redelivers an event it thinks was not acknowledged, possibly
 * to another instance behind the load balancer, and whichever instance inserts the event id first handles
 * it; the others learn it was taken (and by whom) and acknowledge without a second run or card.
 *
 * Queued work (events the long-connection holder received, repairs, reminders) is a row any instance may
 * claim. A claim is a time-limited lease on the row: `FOR UPDATE SKIP LOCKED` hands each ready row to one
 * claimer without blocking the others, and an instance that dies holding a claim loses it when
 * `claimed_until` passes, so another picks the row up. `attempt` grows with each claim and fences it: a
 * claimer whose claim lapsed cannot mark the row done over the next claimer (StaleClaimError).
 */
export type EventClaim = { claimed: true } | { claimed: false; by: string; at: Date };

export interface WorkItem {
  id: string;
  kind: string;
  payload: unknown;
  claimedBy: string;
  /** This claim's number: the fence of complete() and retry(). */
  attempt: number;
}

export interface Claims {
  /** Claims `eventId` for `instance`: true for the first instance to ask, ever (until pruned). */
  claimEvent(eventId: string, instance: string): Promise<EventClaim>;
  /** Forgets event claims older than `olderThanMs` (Feishu stops redelivering long before). Returns how many. */
  pruneEvents(olderThanMs: number): Promise<number>;
  /** Forgets work done longer than `olderThanMs` ago (its dedupe key with it). Returns how many. */
  pruneDone(olderThanMs: number): Promise<number>;
  /**
   * Queues work. With `dedupeKey`, a second enqueue of the same key is nothing (insert-or-nothing) and
   * returns undefined; otherwise the new row's id.
   */
  enqueue(
    kind: string,
    payload: unknown,
    options?: { dedupeKey?: string; delayMs?: number },
  ): Promise<string | undefined>;
  /** Claims up to `limit` ready rows of `kinds` for `claimMs`; oldest first; never a row another holds. */
  /** `leftForMs`: only rows ready for at least that long (what other instances left), default any. */
  claimWork(
    instance: string,
    options: { kinds: readonly string[]; limit?: number; claimMs: number; leftForMs?: number },
  ): Promise<WorkItem[]>;
  /** Marks a claimed row done. StaleClaimError when the claim lapsed and another instance claimed it since. */
  complete(item: WorkItem): Promise<void>;
  /** Gives a claimed row back, ready again after `delayMs`. False when the claim was no longer ours. */
  retry(item: WorkItem, delayMs?: number): Promise<boolean>;
}

/** Feishu's event ids and our dedupe keys are short; anything longer is not one of them. */
const MAX_KEY_LENGTH = 200;

function checkKey(what: string, key: string): void {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new RangeError(`${what} must be 1-${MAX_KEY_LENGTH} characters, got ${key.length}`);
  }
}

function checkMs(what: string, ms: number): void {
  if (!Number.isInteger(ms) || ms < 0)
    throw new RangeError(`${what} must be a non-negative integer, got ${ms}`);
}

const interval = (placeholder: string) => `make_interval(secs => ${placeholder}::double precision / 1000)`;

interface WorkRow {
  id: string;
  kind: string;
  payload: unknown;
  claimed_by: string;
  attempt: number;
}

export function createClaims(db: Db): Claims {
  return {
    async claimEvent(eventId, instance) {
      checkKey("eventId", eventId);
      const inserted = await query(
        db,
        "INSERT INTO cluster_event_claims (event_id, claimed_by) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [eventId, instance],
      );
      if (inserted.rowCount === 1) return { claimed: true };
      const taken = await query<{ claimed_by: string; claimed_at: Date }>(
        db,
        "SELECT claimed_by, claimed_at FROM cluster_event_claims WHERE event_id = $1",
        [eventId],
      );
      const row = taken.rows[0];
      // Pruned between the two statements: so old that it was handled long ago; still not ours to run.
      return { claimed: false, by: row?.claimed_by ?? "unknown", at: row?.claimed_at ?? new Date(0) };
    },

    async pruneEvents(olderThanMs) {
      checkMs("olderThanMs", olderThanMs);
      const result = await query(
        db,
        `DELETE FROM cluster_event_claims WHERE claimed_at < now() - ${interval("$1")}`,
        [olderThanMs],
      );
      return result.rowCount ?? 0;
    },

    async pruneDone(olderThanMs) {
      checkMs("olderThanMs", olderThanMs);
      const result = await query(
        db,
        `DELETE FROM cluster_work WHERE done_at IS NOT NULL AND done_at < now() - ${interval("$1")}`,
        [olderThanMs],
      );
      return result.rowCount ?? 0;
    },

    async enqueue(kind, payload, options = {}) {
      checkKey("kind", kind);
      if (options.dedupeKey !== undefined) checkKey("dedupeKey", options.dedupeKey);
      const delayMs = options.delayMs ?? 0;
      checkMs("delayMs", delayMs);
      const result = await query<{ id: string }>(
        db,
        `INSERT INTO cluster_work (kind, dedupe_key, payload, available_at)
         VALUES ($1, $2, $3, now() + ${interval("$4")})
         ON CONFLICT (dedupe_key) DO NOTHING
         RETURNING id`,
        [kind, options.dedupeKey ?? null, JSON.stringify(payload ?? null), delayMs],
      );
      return result.rows[0]?.id;
    },

    async claimWork(instance, options) {
      checkMs("claimMs", options.claimMs);
      const leftForMs = options.leftForMs ?? 0;
      checkMs("leftForMs", leftForMs);
      const limit = options.limit ?? 10;
      if (!Number.isInteger(limit) || limit < 1)
        throw new RangeError(`limit must be a positive integer, got ${limit}`);
      const result = await query<WorkRow>(
        db,
        `UPDATE cluster_work w SET claimed_by = $1, claimed_until = now() + ${interval("$2")}, attempt = w.attempt + 1
         FROM (
           SELECT id FROM cluster_work
           WHERE done_at IS NULL AND kind = ANY($3) AND available_at <= now() - ${interval("$5")}
             AND (claimed_until IS NULL OR claimed_until <= now())
           ORDER BY id
           LIMIT $4
           FOR UPDATE SKIP LOCKED
         ) ready
         WHERE w.id = ready.id
         RETURNING w.id, w.kind, w.payload, w.claimed_by, w.attempt`,
        [instance, options.claimMs, options.kinds, limit, leftForMs],
      );
      return result.rows
        .map((row) => ({
          id: row.id,
          kind: row.kind,
          payload: row.payload,
          claimedBy: row.claimed_by,
          attempt: row.attempt,
        }))
        .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
    },

    async complete(item) {
      const result = await query(
        db,
        "UPDATE cluster_work SET done_at = now(), claimed_until = NULL WHERE id = $1 AND claimed_by = $2 AND attempt = $3 AND done_at IS NULL",
        [item.id, item.claimedBy, item.attempt],
      );
      if (result.rowCount === 0) throw new StaleClaimError(item.id, item.claimedBy);
    },

    async retry(item, delayMs = 0) {
      checkMs("delayMs", delayMs);
      const result = await query(
        db,
        `UPDATE cluster_work SET claimed_by = NULL, claimed_until = NULL, available_at = now() + ${interval("$4")}
         WHERE id = $1 AND claimed_by = $2 AND attempt = $3 AND done_at IS NULL`,
        [item.id, item.claimedBy, item.attempt, delayMs],
      );
      return (result.rowCount ?? 0) > 0;
    },
  };
}
