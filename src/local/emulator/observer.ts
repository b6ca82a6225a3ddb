import type { EmulatorEvents, RecordedCall } from "./types.ts";

type Listener<T> = (event: T) => void;

/** How many of the latest calls keep their headers and bodies. */
export const BODIES_KEPT = 500;

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
    // Bodies are for the console's live log and a test's last few calls; a long run (a bench) would otherwise
    // hold every card it ever sent. Older calls keep everything but their headers and bodies.
    const old = this.calls.length - 1 - BODIES_KEPT;
    const stale = this.calls[old];
    if (stale?.requestBody !== undefined || stale?.responseBody !== undefined) {
      const { requestHeaders: _headers, requestBody: _request, responseBody: _response, ...rest } = stale;
      this.calls[old] = rest;
    }
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
