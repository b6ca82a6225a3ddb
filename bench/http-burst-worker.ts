import { serveWorker } from "./worker.ts";

/** Worker side of the callback benchmark: fires prepared HTTP requests on schedule and times each one. */

export interface PreparedRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** When to send it, ms after the batch arrives (0: at once). */
  atMs?: number;
}

export interface TimedResponse {
  status: number;
  ms: number;
  body: string;
}

serveWorker<PreparedRequest[], TimedResponse[]>(async (requests) =>
  Promise.all(
    requests.map(async (request) => {
      if (request.atMs) await new Promise((resolve) => setTimeout(resolve, request.atMs));
      const started = performance.now();
      const response = await fetch(request.url, {
        method: "POST",
        headers: request.headers,
        body: request.body,
        signal: AbortSignal.timeout(10_000),
      });
      const body = await response.text();
      return { status: response.status, ms: performance.now() - started, body };
    }),
  ),
);
