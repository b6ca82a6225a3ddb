import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { detailsLinkBase } from "../src/feishu/index.ts";
import { createLogger } from "../src/logger.ts";

/** The 会话详情 link on a real tenant: none without PUBLIC_URL, and the operator is told why at start-up. */
function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, logger: createLogger({ level: "info", destination }) };
}

const FEISHU = {
  FEISHU_APP_ID: "cli_x",
  FEISHU_APP_SECRET: "s",
  AUTH_SECRET: "0123456789abcdef0123456789abcdef",
};

describe("detailsLinkBase", () => {
  it("omits the link in feishu mode without PUBLIC_URL and warns, naming PUBLIC_URL", () => {
    const { lines, logger } = capture();
    expect(detailsLinkBase(loadConfig(FEISHU), logger)).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({
      level: 40,
      msg: expect.stringContaining("PUBLIC_URL"),
    });
  });

  it("uses PUBLIC_URL when it is set, and localhost in local mode, silently", () => {
    const { lines, logger } = capture();
    const set = loadConfig({ ...FEISHU, PUBLIC_URL: "https://bot.example.com/" });
    expect(detailsLinkBase(set, logger)?.()).toBe("https://bot.example.com");
    expect(detailsLinkBase(loadConfig({ PORT: "4000" }), logger)?.()).toBe("http://localhost:4000");
    expect(lines).toEqual([]);
  });
});
