import type { Request, Response } from "express";
import type { ConsoleFeed } from "./feed.ts";

const HEARTBEAT_MS = 15_000;
/** A tab that stops reading gets dropped instead of buffering without bound; it reconnects and resyncs. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/**
 * `GET /console/api/events`: Server-Sent Events, one `data:` line of JSON (a ConsoleEvent) per event.
 * A client that (re)connects loads the current state with the other endpoints first.
 */
export function streamEvents(feed: ConsoleFeed, req: Request, res: Response): void {
  res.status(200).set({
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache, no-transform",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  res.write("retry: 2000\n\n");

  const close = () => {
    clearInterval(heartbeat);
    unsubscribe();
  };
  const unsubscribe = feed.subscribe((event) => {
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      close();
      res.destroy();
      return;
    }
    res.write(`data: ${JSON.stringify(event)}\n\n`);
  });
  const heartbeat = setInterval(() => res.write(": ping\n\n"), HEARTBEAT_MS);
  heartbeat.unref();
  req.on("close", close);
  res.on("error", close);
}
