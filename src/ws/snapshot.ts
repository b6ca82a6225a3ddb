import type { RunFeed } from "../domain/run-feed.ts";
import { KeyedLock } from "../util/keyed-lock.ts";
import type { SessionSnapshot } from "./protocol.ts";

/**
 * A session's `session_snapshot` data, bounded in size whatever is queued: the first few queued messages as
 * short previews and the total count. A session with 40 queued 20 KB messages once made every snapshot
 * 808 KB, and every `subscribe` sent one; a client only shows a line per queued message anyway.
 */

/** Queued messages listed in a snapshot; the rest are counted in `queuedCount`. */
export const SNAPSHOT_QUEUED_MAX = 20;
/** UTF-16 units of a queued message's text kept in its preview. */
export const SNAPSHOT_TEXT_MAX = 200;
/** UTF-16 units of the run's input kept (pages show it as a one-line title; the whole message can be 150 KB). */
export const SNAPSHOT_INPUT_MAX = 2000;

export async function sessionSnapshot(
  runner: Pick<RunFeed, "activeRun" | "currentRun" | "queuedPreview">,
  sessionId: string,
): Promise<SessionSnapshot> {
  // One character more than shown, so a cut text is known to be cut; the database counts characters.
  const queue = await runner.queuedPreview(sessionId, SNAPSHOT_QUEUED_MAX, SNAPSHOT_TEXT_MAX + 1);
  // The active run is read last, from memory: the snapshot is never older than an event sent before it.
  const active = runner.activeRun(sessionId);
  const current = active ?? (await runner.currentRun(sessionId));
  const run = current ? { ...current, input: preview(current.input, SNAPSHOT_INPUT_MAX) } : null;
  return {
    active: active !== undefined,
    run,
    queued: queue.items.map((item) => ({ ...item, text: preview(item.text, SNAPSHOT_TEXT_MAX) })),
    queuedCount: queue.total,
  };
}

function preview(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never end on half a surrogate pair: the browser would show a replacement character.
  return `${text.slice(0, max).replace(/[\uD800-\uDBFF]$/, "")}…`;
}

/**
 * Sends sessions' snapshots, one read at a time per session, so snapshots reach a connection in the order their
 * reads began (an older one never lands after a newer one), and a burst of run events while one is being read
 * makes one more read, not one per event.
 */
export class SnapshotSender {
  readonly #runs: Pick<RunFeed, "activeRun" | "currentRun" | "queuedPreview">;
  readonly #sessions = new KeyedLock();
  /** Sessions with a snapshot for every subscriber queued and not yet begun. */
  readonly #queued = new Set<string>();
  readonly #onError: (error: unknown, sessionId: string) => void;

  constructor(
    runs: Pick<RunFeed, "activeRun" | "currentRun" | "queuedPreview">,
    onError: (error: unknown, sessionId: string) => void,
  ) {
    this.#runs = runs;
    this.#onError = onError;
  }

  /** The snapshot for whoever `send` reaches when it is read (`send` runs after the read, in order). */
  send(sessionId: string, send: (snapshot: SessionSnapshot) => void): Promise<void> {
    return this.#read(sessionId, () => undefined, send);
  }

  /** A snapshot for every subscriber; coalesced with one queued whose read has not begun. */
  sendToAll(sessionId: string, send: (snapshot: SessionSnapshot) => void): void {
    if (this.#queued.has(sessionId)) return;
    this.#queued.add(sessionId);
    void this.#read(sessionId, () => this.#queued.delete(sessionId), send);
  }

  #read(sessionId: string, begin: () => void, send: (snapshot: SessionSnapshot) => void): Promise<void> {
    return this.#sessions.run(sessionId, async () => {
      // From here a new event needs a read of its own: this one may already be past what it changed.
      begin();
      try {
        send(await sessionSnapshot(this.#runs, sessionId));
      } catch (error) {
        this.#onError(error, sessionId);
      }
    });
  }
}
