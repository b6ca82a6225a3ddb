import type { Connection } from "./connections.ts";

/**
 * A connection's frames are handled one after the other, in the order they came (an answer before the cancel
 * sent after it), whatever each waits on; connections do not wait for each other. A handler must not reject:
 * the next frame of its connection waits on it.
 */
export class FrameOrder {
  /** The frame each connection is still handling. */
  readonly #working = new WeakMap<Connection, Promise<void>>();

  handle(connection: Connection, handle: () => void | Promise<void>): void {
    const before = this.#working.get(connection);
    const work = before ? before.then(handle) : handle();
    if (!work) return;
    this.#working.set(connection, work);
    void work.finally(() => {
      if (this.#working.get(connection) === work) this.#working.delete(connection);
    });
  }
}
