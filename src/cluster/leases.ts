import type pg from "pg";
import { StaleFenceError } from "./errors.ts";
import { type Db, type Queryable, query, transaction } from "./pool.ts";

/**
 * Leases with fencing tokens, in a plain table on the database's clock (docs/several-instances.md).
 *
 * Why a table and not advisory locks: a session-level advisory lock belongs to a connection, and behind a
 * transaction-mode pooler (PgBouncer) a connection is not ours between statements; a row with `expires_at`
 * works through any pooler and says who holds it. Why the database's clock: `expires_at` is compared with
 * `now()` in the same statement that reads it, so no two hosts' clocks are ever compared.
 *
 * The fence grows by one each time the lease changes hands (and when a holder comes back after its lease
 * lapsed), never goes back (the row is kept on release), and every write made under a lease goes through
 * `fenced`, which checks in the write's own transaction that the fence is still current. A holder paused
 * past its lease (a GC pause, SIGSTOP, a VM migration) therefore cannot write once it resumes: its fence
 * is stale, and the write throws StaleFenceError.
 */
export interface Lease {
  name: string;
  holder: string;
  /** Grows with each new term; a write under an older fence is refused. */
  fence: number;
  /** On the database's clock; shown for people and logs, never compared with a host's clock. */
  expiresAt: Date;
}

export interface Leases {
  /** Takes `name` for `holder` when it is free, expired, or already this holder's; undefined when another holds it. */
  acquire(name: string, holder: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends a live lease of the same term (same fence); undefined when it lapsed or changed hands. */
  renew(lease: Lease, ttlMs: number): Promise<Lease | undefined>;
  /** Gives the lease up at once (the fence stays, so the next holder's is higher). False when not ours any more. */
  release(lease: Lease): Promise<boolean>;
  /** The live holder of `name`, if any. */
  current(name: string): Promise<Lease | undefined>;
  /**
   * Runs `write` in one transaction that first checks, under a share lock on the lease row, that `lease` is
   * still live and current. A takeover waits for that transaction; a stale lease throws StaleFenceError and
   * `write` never runs.
   */
  fenced<T>(lease: Lease, write: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

interface LeaseRow {
  name: string;
  holder: string;
  fence: string;
  expires_at: Date;
}

const RETURNING = "RETURNING name, holder, fence, expires_at";

function toLease(row: LeaseRow): Lease {
  return { name: row.name, holder: row.holder, fence: Number(row.fence), expiresAt: row.expires_at };
}

function checkTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0)
    throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
}

export function createLeases(db: Db): Leases {
  return {
    async acquire(name, holder, ttlMs) {
      checkTtl(ttlMs);
      // One statement: insert the first term, or take over an expired row (a new term: fence + 1), or
      // extend our own live term (same fence). A live lease of another holder matches no row.
      const result = await query<LeaseRow>(
        db,
        `INSERT INTO cluster_leases AS l (name, holder, fence, acquired_at, expires_at)
         VALUES ($1, $2, 1, now(), now() + make_interval(secs => $3::double precision / 1000))
         ON CONFLICT (name) DO UPDATE SET
           holder = EXCLUDED.holder,
           expires_at = EXCLUDED.expires_at,
           fence = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at > now() THEN l.fence ELSE l.fence + 1 END,
           acquired_at = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at > now() THEN l.acquired_at ELSE now() END
         WHERE l.expires_at <= now() OR l.holder = EXCLUDED.holder
         ${RETURNING}`,
        [name, holder, ttlMs],
      );
      const row = result.rows[0];
      return row ? toLease(row) : undefined;
    },

    async renew(lease, ttlMs) {
      checkTtl(ttlMs);
      const result = await query<LeaseRow>(
        db,
        `UPDATE cluster_leases SET expires_at = now() + make_interval(secs => $4::double precision / 1000)
         WHERE name = $1 AND holder = $2 AND fence = $3 AND expires_at > now()
         ${RETURNING}`,
        [lease.name, lease.holder, lease.fence, ttlMs],
      );
      const row = result.rows[0];
      return row ? toLease(row) : undefined;
    },

    async release(lease) {
      const result = await query(
        db,
        `UPDATE cluster_leases SET expires_at = now()
         WHERE name = $1 AND holder = $2 AND fence = $3 AND expires_at > now()`,
        [lease.name, lease.holder, lease.fence],
      );
      return (result.rowCount ?? 0) > 0;
    },

    async current(name) {
      const result = await query<LeaseRow>(
        db,
        "SELECT name, holder, fence, expires_at FROM cluster_leases WHERE name = $1 AND expires_at > now()",
        [name],
      );
      const row = result.rows[0];
      return row ? toLease(row) : undefined;
    },

    fenced(lease, write) {
      return transaction(db, async (client) => {
        await assertCurrent(client, lease);
        return write(client);
      });
    },
  };
}

/**
 * Inside a caller's own transaction: throws StaleFenceError unless `lease` is live and current. `FOR SHARE`
 * keeps the row (and so the term) from changing until the transaction ends.
 */
export async function assertCurrent(client: Queryable, lease: Lease): Promise<void> {
  const result = await query(
    client,
    `SELECT 1 FROM cluster_leases
     WHERE name = $1 AND holder = $2 AND fence = $3 AND expires_at > now()
     FOR SHARE`,
    [lease.name, lease.holder, lease.fence],
  );
  if (result.rowCount === 0) throw new StaleFenceError(lease.name, lease.fence, lease.holder);
}
