import type { RunFeed } from "../domain/run-feed.ts";
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

export function sessionSnapshot(
  runner: Pick<RunFeed, "activeRun" | "currentRun" | "queuedPreview">,
  sessionId: string,
): SessionSnapshot {
  const active = runner.activeRun(sessionId);
  const current = active ?? runner.currentRun(sessionId);
  const run = current ? { ...current, input: preview(current.input, SNAPSHOT_INPUT_MAX) } : null;
  // One character more than shown, so a cut text is known to be cut; SQLite counts characters.
  const queue = runner.queuedPreview(sessionId, SNAPSHOT_QUEUED_MAX, SNAPSHOT_TEXT_MAX + 1);
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
