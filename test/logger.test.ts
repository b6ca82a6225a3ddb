import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, stdoutLines } from "../src/logger.ts";

describe("logger", () => {
  it("redacts secrets and Authorization headers wherever a module logs them", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const logger = createLogger({ level: "info", destination });
    logger.info(
      {
        appSecret: "s3cret",
        config: { appSecret: "s3cret" },
        req: { headers: { authorization: "Bearer t0ken" } },
        token: "t0ken",
      },
      "request",
    );
    const output = lines.join("");
    expect(output).toContain("[redacted]");
    expect(output).not.toContain("s3cret");
    expect(output).not.toContain("t0ken");
  });

  it("never waits on stdout: a full pipe drops the rest of a line and ends it, a gone reader ends logging", () => {
    const written: string[] = [];
    // Per write call: how many bytes the pipe takes ("all"), or the error it answers with.
    const pipe: (number | "all" | "EAGAIN" | "EPIPE")[] = ["all", 4, "EAGAIN", "all", "EPIPE"];
    let calls = 0;
    const destination = stdoutLines(1, (_fd, data) => {
      calls += 1;
      const step = pipe.shift();
      if (step === "EAGAIN" || step === "EPIPE") throw Object.assign(new Error(step), { code: step });
      const text = String(data);
      const taken = step === "all" || step === undefined ? text : text.slice(0, step);
      written.push(taken);
      return Buffer.byteLength(taken);
    });
    destination.write('{"msg":"one"}\n');
    destination.write('{"msg":"two"}\n');
    destination.write('{"msg":"three"}\n');
    destination.write('{"msg":"four"}\n');
    destination.write('{"msg":"five"}\n');
    expect(written.join("")).toBe('{"msg":"one"}\n{"ms\n{"msg":"three"}\n');
    // After EPIPE nothing more is tried.
    expect(calls).toBe(5);
  });
});
