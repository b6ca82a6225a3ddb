import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.ts";
import {
  connectionCap,
  DEFAULT_MAX_CONNECTIONS,
  parseOpenFilesLimit,
  readOpenFilesLimit,
} from "../src/web/fd-limit.ts";

// The shape of Linux's /proc/self/limits (proc(5)), a few rows of it.
const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             63412                63412                processes
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe("the connection cap and the open-files limit", () => {
  it("reads the soft open-files limit, as ulimit -n prints it", () => {
    expect(parseOpenFilesLimit(LIMITS)).toBe(1024);
    expect(parseOpenFilesLimit(LIMITS.replace("1024 ", "unlimited "))).toBe(Number.POSITIVE_INFINITY);
    expect(parseOpenFilesLimit("Max processes 10 10 processes")).toBeUndefined();
    expect(readOpenFilesLimit(() => LIMITS)).toBe(1024);
    const missing = Object.assign(new Error("ENOENT"), { code: "ENOENT" });
    expect(
      readOpenFilesLimit(() => {
        throw missing;
      }),
    ).toBeUndefined();
  });

  it("sizes the cap from the limit, leaving the bot its own descriptors", () => {
    expect(connectionCap({ fdLimit: 1024 })).toEqual({ maxConnections: 384, source: "fd limit" });
    expect(connectionCap({ fdLimit: 1_048_576 }).maxConnections).toBe(4096);
    expect(connectionCap({ fdLimit: Number.POSITIVE_INFINITY }).maxConnections).toBe(4096);
    expect(connectionCap({})).toEqual({ maxConnections: DEFAULT_MAX_CONNECTIONS, source: "default" });
    const low = connectionCap({ fdLimit: 256 });
    expect(low.maxConnections).toBe(64);
    expect(low.warning).toMatch(/ulimit -n/);
  });

  it("refuses MAX_CONNECTIONS the limit cannot hold, saying how to fix it", () => {
    expect(connectionCap({ configured: 500, fdLimit: 1024 })).toEqual({
      maxConnections: 500,
      source: "MAX_CONNECTIONS",
    });
    expect(() => connectionCap({ configured: 2000, fdLimit: 1024 })).toThrow(ConfigError);
    expect(() => connectionCap({ configured: 2000, fdLimit: 1024 })).toThrow(
      /ulimit -n 2256.*MAX_CONNECTIONS/s,
    );
  });
});
