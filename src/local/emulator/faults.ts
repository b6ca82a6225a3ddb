import type { Fault, FaultHandle, FaultResponse } from "./types.ts";

interface ActiveFault {
  method: string | undefined;
  path: string | RegExp | undefined;
  bodyIncludes: string | undefined;
  remaining: number;
  response: FaultResponse;
}

/** Injected failures and delays, consumed in the order they were added (first match wins). */
export class FaultQueue {
  #faults: ActiveFault[] = [];

  add(fault: Fault): FaultHandle {
    if (!Number.isInteger(fault.times) || fault.times < 1)
      throw new Error("fault.times must be a positive integer");
    const active: ActiveFault = {
      method: fault.match?.method?.toUpperCase(),
      path: fault.match?.path,
      bodyIncludes: fault.match?.bodyIncludes,
      remaining: fault.times,
      response: fault.response,
    };
    this.#faults.push(active);
    return {
      get remaining() {
        return active.remaining;
      },
      cancel: () => {
        active.remaining = 0;
        this.#prune();
      },
    };
  }

  /**
   * Consumes one use of the first fault matching this call, if any. Called before the body is read (faults
   * without `bodyIncludes`) and again after it (`body` given: only faults with `bodyIncludes`).
   */
  take(method: string, path: string, body?: string): FaultResponse | undefined {
    const fault = this.#faults.find(
      (candidate) =>
        candidate.remaining > 0 &&
        (body === undefined
          ? candidate.bodyIncludes === undefined
          : candidate.bodyIncludes !== undefined && body.includes(candidate.bodyIncludes)) &&
        matches(candidate, method, path),
    );
    if (!fault) return undefined;
    fault.remaining -= 1;
    this.#prune();
    return fault.response;
  }

  clear(): void {
    for (const fault of this.#faults) fault.remaining = 0;
    this.#faults = [];
  }

  #prune(): void {
    this.#faults = this.#faults.filter((fault) => fault.remaining > 0);
  }
}

function matches(fault: ActiveFault, method: string, path: string): boolean {
  if (fault.method !== undefined && fault.method !== method.toUpperCase()) return false;
  if (fault.path === undefined) return true;
  return typeof fault.path === "string" ? path.startsWith(fault.path) : fault.path.test(path);
}
