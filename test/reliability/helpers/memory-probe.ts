import { writeSync } from "node:fs";

/**
 * Preloaded into the bot's process by the load test (`--expose-gc --import tsx --import <this file>`): on
 * SIGUSR2 it collects garbage and prints the process's memory as one line on stderr. It changes nothing else.
 */
const gc = (globalThis as { gc?: () => void }).gc;

process.on("SIGUSR2", () => {
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  writeSync(2, `MEMPROBE ${JSON.stringify({ ...usage, gc: gc !== undefined, at: Date.now() })}\n`);
});
