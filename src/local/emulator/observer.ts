import type { EmulatorEvents, RecordedCall } from "./types.ts";

type Listener<T> = (event: T) => void;

/** Keeps the call log and fans out live events to listeners (a console, a test). */
export class Observer {
  readonly calls: RecordedCall[] = [];
  readonly #listeners = new Map<keyof EmulatorEvents, Set<Listener<never>>>();
  readonly #onListenerError: (error: unknown) => void;

  constructor(onListenerError: (error: unknown) => void) {
    this.#onListenerError = onListenerError;
  }

  on<K extends keyof EmulatorEvents>(event: K, listener: Listener<EmulatorEvents[K]>): () => void {
    let set = this.#listeners.get(event);
    if (!set) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as Listener<never>);
    return () => {
      set.delete(listener as Listener<never>);
    };
  }

  emit<K extends keyof EmulatorEvents>(event: K, payload: EmulatorEvents[K]): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) {
      try {
        (listener as Listener<EmulatorEvents[K]>)(payload);
      } catch (error) {
        this.#onListenerError(error);
      }
    }
  }

  record(call: RecordedCall): void {
    this.calls.push(call);
    this.emit("call", call);
  }

  callsTo(method: string, path: string | RegExp): RecordedCall[] {
    const wanted = method.toUpperCase();
    return this.calls.filter(
      (call) =>
        call.method === wanted &&
        (typeof path === "string" ? call.path.startsWith(path) : path.test(call.path)),
    );
  }
}
