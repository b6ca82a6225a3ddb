import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";

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
});
