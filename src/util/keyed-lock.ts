/**
 * One task at a time per key, in arrival order; different keys run side by side. The runner's "is a run under
 * way in this session? then queue, else start" must not interleave with another message of the same session
 * now that the database answers asynchronously. A task that throws does not block the key.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key) ?? Promise.resolve();
    const result = before.catch(() => undefined).then(task);
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Resolves once every task running or waiting now has ended. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all(this.#tails.values());
  }

  /** Keys with a task running or waiting. */
  get size(): number {
    return this.#tails.size;
  }
}
