import { createHash } from "node:crypto";
import { z } from "zod";

/**
 * The MCP calls waiting for an answer now, by caller and JSON-RPC request id, so that a
 * `notifications/cancelled` can end one. `/mcp` is stateless: the cancellation arrives on a POST of its own
 * (Claude Code sends it when its tool timeout fires), where the SDK's server has no such request; this is
 * where it finds the waiting call. The caller is the bearer token (hashed: no secret kept as a map key), so
 * one client can only cancel its own calls, whatever request ids another client picks.
 */

export class WaitingCalls {
  readonly #calls = new Map<string, AbortController>();

  /** A waiting call from `caller`: its signal aborts on a matching cancel; `done` forgets it. */
  enter(caller: string, requestId: string | number): { signal: AbortSignal; done: () => void } {
    const key = keyOf(caller, requestId);
    const controller = new AbortController();
    this.#calls.set(key, controller);
    return {
      signal: controller.signal,
      done: () => {
        if (this.#calls.get(key) === controller) this.#calls.delete(key);
      },
    };
  }

  /** True when a waiting call of `caller` had that id (it stops waiting; its question stays open). */
  cancel(caller: string, requestId: string | number): boolean {
    const key = keyOf(caller, requestId);
    const controller = this.#calls.get(key);
    if (!controller) return false;
    this.#calls.delete(key);
    controller.abort();
    return true;
  }

  get size(): number {
    return this.#calls.size;
  }
}

/** Who calls: the hash of the bearer token the request came with. */
export function callerOf(authorization: string | undefined): string {
  return createHash("sha256")
    .update(authorization ?? "")
    .digest("base64url");
}

/**
 * The request ids a POST body cancels: `notifications/cancelled` messages, alone or in a batch. Anything
 * else is the transport's to judge (and to refuse with its own errors).
 */
const cancelledSchema = z.object({
  method: z.literal("notifications/cancelled"),
  params: z.object({ requestId: z.union([z.string(), z.number()]) }),
});

export function cancelledIds(body: unknown): (string | number)[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.flatMap((message) => {
    const parsed = cancelledSchema.safeParse(message);
    return parsed.success ? [parsed.data.params.requestId] : [];
  });
}

function keyOf(caller: string, requestId: string | number): string {
  // The id's JSON keeps 7 and "7" apart, as JSON-RPC does.
  return `${caller} ${JSON.stringify(requestId)}`;
}
