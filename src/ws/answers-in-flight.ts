import type { ServerFrame } from "./protocol.ts";

/**
 * Page answers whose row is being written (hub.ts). The connection whose answer wins must hear "accepted"
 * before the "cancelled" every connection gets, but the settle (and its "cancelled") happens while that
 * answer is still being written: frames for a connection with an answer in flight to the same question are
 * held and sent after its own reply, in order.
 */
export class AnswersInFlight<C> {
  readonly #held = new Map<string, Map<C, { count: number; frames: ServerFrame[] }>>();

  begin(requestId: string, connection: C): void {
    const byConnection = this.#held.get(requestId) ?? new Map<C, { count: number; frames: ServerFrame[] }>();
    const entry = byConnection.get(connection) ?? { count: 0, frames: [] };
    entry.count += 1;
    byConnection.set(connection, entry);
    this.#held.set(requestId, byConnection);
  }

  /** True when `frame` waits for `connection`'s answer to `requestId` (then it is sent by `end`). */
  hold(requestId: string, connection: C, frame: ServerFrame): boolean {
    const entry = this.#held.get(requestId)?.get(connection);
    if (!entry) return false;
    entry.frames.push(frame);
    return true;
  }

  /** The answer was written (or refused): the frames held for it, once its last answer in flight ends. */
  end(requestId: string, connection: C): ServerFrame[] {
    const byConnection = this.#held.get(requestId);
    const entry = byConnection?.get(connection);
    if (!byConnection || !entry) return [];
    entry.count -= 1;
    if (entry.count > 0) return [];
    byConnection.delete(connection);
    if (byConnection.size === 0) this.#held.delete(requestId);
    return entry.frames;
  }
}
