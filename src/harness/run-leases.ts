import { performance } from "node:perf_hooks";
import { sql } from "kysely";
import { StaleFenceError } from "../cluster/errors.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { Store } from "../store/repos.ts";
import { run, type StoreSql } from "../store/sql.ts";
import type { Adopted, RunCommand, RunOwnership } from "./run-ownership.ts";

/**
 * Run ownership across instances on one Postgres (issue 27): the lease `run:<id>` in `cluster_leases`
 * (src/cluster/leases.ts has the rules: the database's clock, a fence that grows with each term), written in
 * the same transaction as the run's row, so a run is never unheld between its row and its lease. All of this
 * instance's runs are renewed in one statement every `renewEveryMs`. A run whose renewal is not confirmed
 * within `ttlMs - marginMs` of the last one sent (measured on this host's monotonic clock, so it ends before
 * the database's expiry can) is lost here: the runner stops it without writing, and every later write of it is
 * refused by the fence, checked inside the write's own transaction (a holder paused past its lease).
 */

export interface RunLeaseOptions {
  sql: StoreSql;
  /** This instance's id, unique among the live ones (the lease holder). */
  instance: string;
  /**
   * Where its DATA_DIR is (instances.ts: an id kept in it): a run last held by an instance of the same home was
   * run from this disk (a restart), any other was run from elsewhere (a takeover).
   */
  home: string;
  log: Logger;
  /** Default 10 s: a dead instance's runs are adopted this long after its last renewal, plus one adopt pass. */
  ttlMs?: number;
  /** Default 2 s. */
  renewEveryMs?: number;
  /** Default 2 s: a run is given up locally this long before its lease can expire on the database. */
  marginMs?: number;
  /** How often to look for runs whose holder is gone (default 2 s). */
  adoptEveryMs?: number;
  /** Carries commands to whichever instance holds a run (instances.ts: work rows and a wake-up); none: not forwarded. */
  relay?: CommandRelay;
}

/**
 * Commands are addressed to the run, not to an instance: the run's holder when it is sent may die before it
 * reads it, and its adopter must find it.
 */
export interface CommandRelay {
  send(command: RunCommand): Promise<void>;
  /**
   * Calls `deliver` with each command for a run `held` says this instance holds; `deliver` true: done with it,
   * false: not now (the run is being adopted here, or went elsewhere), given back to be read again.
   */
  listen(deliver: (command: RunCommand) => Promise<boolean>, held: () => string[]): void;
}

interface Held {
  fence: number;
  /** performance.now() past which the hold is not assumed any more. */
  until: number;
}

const UNFINISHED = ["running", "recovering"] as const;
/** Lost runs remembered: a card still open here for one is written by its new holder, never from here. */
const MAX_LAPSED = 1_000;
const leaseName = (runId: string) => `run:${runId}`;
/** A holder is `host:pid:random:home` (instances.ts); its home is the last part. */
const homeOf = (holder: string) => holder.slice(holder.lastIndexOf(":") + 1);
const interval = (ms: number) => sql`now() + make_interval(secs => ${ms}::double precision / 1000)`;

export class RunLeases implements RunOwnership {
  readonly adoptEveryMs: number;
  readonly #sql: StoreSql;
  readonly #instance: string;
  readonly #home: string;
  readonly #relay: CommandRelay | undefined;
  readonly #log: Logger;
  readonly #ttlMs: number;
  readonly #marginMs: number;
  readonly #held = new Map<string, Held>();
  readonly #lost = new Set<(runId: string) => void>();
  /** Runs lost here lately, oldest first (bounded): their cards must not be written from here. */
  readonly #lapsed = new Set<string>();
  readonly #timer: NodeJS.Timeout;
  #serving: () => boolean = () => true;
  /** While not serving: when each unheld run was first seen unheld here. */
  readonly #unheldSince = new Map<string, number>();
  #renewing: Promise<void> | undefined;

  constructor(options: RunLeaseOptions) {
    if (options.sql.dialect !== "postgres") throw new Error("run leases need the Postgres store");
    this.#sql = options.sql;
    this.#instance = options.instance;
    this.#home = options.home;
    this.#relay = options.relay;
    this.#log = options.log;
    this.#ttlMs = options.ttlMs ?? 10_000;
    this.#marginMs = options.marginMs ?? 2_000;
    this.adoptEveryMs = options.adoptEveryMs ?? 2_000;
    this.#timer = setInterval(() => void this.renew(), options.renewEveryMs ?? 2_000);
    this.#timer.unref();
  }

  /** The runs this instance holds now (for /metrics and tests). */
  get held(): number {
    return this.#held.size;
  }

  sessionBusy(tx: StoreSql, sessionId: string): Promise<boolean> {
    // The session's row lock serialises every intake of the session across instances until this commits.
    return new Store(tx, Date.now).hasUnfinishedRun(sessionId);
  }

  async claim(tx: StoreSql, runId: string): Promise<void> {
    const sent = performance.now();
    const row = await sql<{ fence: number }>`
      INSERT INTO cluster_leases (name, holder, fence, acquired_at, expires_at)
      VALUES (${leaseName(runId)}, ${this.#instance}, 1, now(), ${interval(this.#ttlMs)})
      RETURNING fence`.execute(tx.db);
    const fence = Number(row.rows[0]?.fence ?? 1);
    this.#held.set(runId, { fence, until: sent + this.#ttlMs - this.#marginMs });
  }

  async guarded<T>(store: Store, runId: string, body: (store: Store) => Promise<T>): Promise<T> {
    const held = this.#held.get(runId);
    if (!held || held.until <= performance.now()) throw this.#stale(runId, held);
    return store.transaction(async (tx) => {
      // FOR SHARE: a takeover waits for this write's commit, so no change of term falls inside it.
      const current = await sql`
        SELECT 1 FROM cluster_leases
        WHERE name = ${leaseName(runId)} AND holder = ${this.#instance} AND fence = ${held.fence}
          AND expires_at > now()
        FOR SHARE`.execute(tx.sql.db);
      if (current.rows.length === 0) {
        if (this.#held.get(runId) === held) this.#lose(runId, "another instance holds it now (the fence)");
        throw this.#stale(runId, held);
      }
      return body(tx);
    });
  }

  /**
   * While `serving` says this instance cannot serve (feishu/runtime.ts: its share of the app's budget does not
   * let it send cards yet), it leaves unheld runs to the instances that can for a TTL, and adopts those still
   * unheld after it: when no instance can serve (all of them new), the runs are held all the same.
   */
  serveWhen(serving: () => boolean): void {
    this.#serving = serving;
  }

  async adopt(store: Store): Promise<Adopted[]> {
    // Unfinished runs whose lease lapsed or was given up (a run is never written without one: claim).
    const unheld = await store.unheldRuns();
    const adopted: Adopted[] = [];
    for (const id of this.#serving() ? unheld : this.#leftLongEnough(unheld)) {
      const previous = await this.#acquire(id);
      if (previous === undefined) continue; // another instance adopted it first
      const view = await store.getRun(id);
      // Ended between the look and the lease (its holder's last write landed): nothing to resume.
      if (!view || !UNFINISHED.some((status) => status === view.status)) {
        await this.ended(id);
        continue;
      }
      adopted.push({ run: view, home: homeOf(previous) === this.#home ? "here" : "elsewhere" });
    }
    return adopted;
  }

  /** Of `unheld`, those this instance saw unheld a TTL ago or more (it keeps only the runs still unheld). */
  #leftLongEnough(unheld: readonly string[]): string[] {
    const now = performance.now();
    for (const id of this.#unheldSince.keys()) if (!unheld.includes(id)) this.#unheldSince.delete(id);
    for (const id of unheld) if (!this.#unheldSince.has(id)) this.#unheldSince.set(id, now);
    return unheld.filter((id) => now - (this.#unheldSince.get(id) ?? now) >= this.#ttlMs);
  }

  holds(runId: string): boolean {
    const held = this.#held.get(runId);
    return held !== undefined && held.until > performance.now();
  }

  lapsed(runId: string): boolean {
    const held = this.#held.get(runId);
    return held === undefined ? this.#lapsed.has(runId) : held.until <= performance.now();
  }

  async ended(runId: string): Promise<void> {
    const held = this.#held.get(runId);
    this.#held.delete(runId);
    if (!held) return;
    // An ended run is never resumed (a retry is a new run), so its row can go: no fence is needed after it.
    await run(this.#sql, () =>
      sql`DELETE FROM cluster_leases
          WHERE name = ${leaseName(runId)} AND holder = ${this.#instance} AND fence = ${held.fence}`.execute(
        this.#sql.db,
      ),
    );
  }

  async released(runId: string): Promise<void> {
    const held = this.#held.get(runId);
    this.#held.delete(runId);
    if (!held) return;
    // Kept with its fence (the next holder's is one more), expired now: adopted at another's next look.
    await run(this.#sql, () =>
      sql`UPDATE cluster_leases SET expires_at = now()
          WHERE name = ${leaseName(runId)} AND holder = ${this.#instance} AND fence = ${held.fence}
            AND expires_at > now()`.execute(this.#sql.db),
    );
  }

  async forward(command: RunCommand): Promise<boolean> {
    if (!this.#relay || this.#held.has(command.runId)) return false;
    await this.#relay.send(command);
    return true;
  }

  onCommand(listener: (command: RunCommand) => Promise<boolean>): void {
    this.#relay?.listen(listener, () => [...this.#held.keys()]);
  }

  onLost(listener: (runId: string) => void): void {
    this.#lost.add(listener);
  }

  /** One statement renews every run held here; what it does not return, or what ran out of time, is lost. */
  renew(): Promise<void> {
    this.#renewing ??= this.#renewAll().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#renewing;
  }

  async #renewAll(): Promise<void> {
    const held = [...this.#held.entries()];
    if (held.length === 0) return;
    const sent = performance.now();
    try {
      const renewed = await run(this.#sql, () =>
        sql<{ name: string }>`
          UPDATE cluster_leases SET expires_at = ${interval(this.#ttlMs)}
          WHERE holder = ${this.#instance} AND expires_at > now()
            AND (name, fence) IN (
              SELECT * FROM unnest(${held.map(([id]) => leaseName(id))}::text[], ${held.map(([, h]) => h.fence)}::bigint[]))
          RETURNING name`.execute(this.#sql.db),
      );
      const names = new Set(renewed.rows.map((row) => row.name));
      for (const [runId, hold] of held) {
        if (this.#held.get(runId) !== hold) continue; // ended or released meanwhile
        if (names.has(leaseName(runId))) hold.until = sent + this.#ttlMs - this.#marginMs;
        else this.#lose(runId, "its lease was not renewed: another instance may hold it");
      }
    } catch (error) {
      this.#log.warn({ err: describeError(error), runs: held.length }, "run leases not renewed");
    }
    const now = performance.now();
    for (const [runId, hold] of this.#held)
      if (hold.until <= now) this.#lose(runId, "its lease ran out before a renewal was confirmed");
  }

  /** Takes the lapsed lease of a run; the previous holder ("" when there was no row), undefined when refused. */
  async #acquire(runId: string): Promise<string | undefined> {
    const sent = performance.now();
    const row = await run(this.#sql, () =>
      sql<{ fence: number; previous: string | null }>`
        WITH previous AS (SELECT holder FROM cluster_leases WHERE name = ${leaseName(runId)})
        INSERT INTO cluster_leases AS l (name, holder, fence, acquired_at, expires_at)
        VALUES (${leaseName(runId)}, ${this.#instance}, 1, now(), ${interval(this.#ttlMs)})
        ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
          fence = l.fence + 1, acquired_at = now()
        WHERE l.expires_at <= now()
        RETURNING fence, (SELECT holder FROM previous) AS previous`.execute(this.#sql.db),
    );
    const taken = row.rows[0];
    if (taken === undefined) return undefined;
    this.#held.set(runId, { fence: Number(taken.fence), until: sent + this.#ttlMs - this.#marginMs });
    this.#lapsed.delete(runId);
    return taken.previous ?? "";
  }

  #lose(runId: string, why: string): void {
    this.#held.delete(runId);
    this.#lapsed.add(runId);
    const oldest = this.#lapsed.size > MAX_LAPSED ? this.#lapsed.values().next().value : undefined;
    if (oldest !== undefined) this.#lapsed.delete(oldest);
    this.#log.warn({ runId }, `run given up here: ${why}`);
    for (const listener of this.#lost) {
      try {
        listener(runId);
      } catch (error) {
        this.#log.error({ err: describeError(error), runId }, "a lost run's listener failed");
      }
    }
  }

  #stale(runId: string, held: Held | undefined): StaleFenceError {
    return new StaleFenceError(leaseName(runId), held?.fence ?? 0, this.#instance);
  }
}
