/**
 * A waiting call: until the ask settles, `waitMs` passes, or the caller goes away — whichever comes first.
 * Meanwhile `onProgress` every `intervalMs` ("等待 Alice 在飞书回答 · 3 分钟"): clients that reset their timer on
 * progress (MCP Inspector, the TypeScript SDK's `resetTimeoutOnProgress`) keep waiting, and every client can
 * show whom the call waits for. Progress does NOT extend Claude Code's limit: it ends a call at exactly
 * `MCP_TOOL_TIMEOUT` (issue 31 measured it), so the tool's description tells models to keep wait_s under each
 * client's limit (connect-recipes.ts `CLIENT_TIMEOUTS`).
 * The ask itself is never cancelled here: it lives until its own deadline, whoever is waiting.
 */

export interface WaitOptions {
  waitMs: number;
  /** The client went away (HTTP connection closed, MCP request cancelled). */
  signal?: AbortSignal;
  onProgress?: (tick: { count: number; message: string }) => void | Promise<void>;
  /** A progress notification that could not be sent (logged by the caller; the wait goes on). */
  onProgressError?: (error: unknown) => void;
}

export async function waitForSettle(
  settled: Promise<unknown>,
  options: WaitOptions & { intervalMs: number; message: () => string },
): Promise<void> {
  if (options.waitMs <= 0 || options.signal?.aborted) return;
  const timers: ReturnType<typeof setTimeout>[] = [];
  let ticker: ReturnType<typeof setInterval> | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      settled,
      new Promise<void>((resolve) => {
        timers.push(setTimeout(resolve, options.waitMs));
        onAbort = resolve;
        options.signal?.addEventListener("abort", onAbort, { once: true });
        const { onProgress } = options;
        if (onProgress) {
          let count = 0;
          ticker = setInterval(() => {
            count += 1;
            // A notification that cannot be sent (the stream closed) ends nothing: the timer or abort will.
            void Promise.resolve()
              .then(() => onProgress({ count, message: options.message() }))
              .catch((error: unknown) => options.onProgressError?.(error));
          }, options.intervalMs);
        }
      }),
    ]);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    if (ticker) clearInterval(ticker);
    if (onAbort) options.signal?.removeEventListener("abort", onAbort);
  }
}
