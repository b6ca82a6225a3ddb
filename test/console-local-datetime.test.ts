import { describe, expect, it } from "vitest";
import { resolveLocalDatetimes } from "../src/local/console/public/card-values.ts";

/** The console shows card markdown's <local_datetime> as Feishu does: in the viewer's own zone. */
describe("resolveLocalDatetimes (the console's <local_datetime>)", () => {
  const at = Date.UTC(2026, 10, 30, 16, 10);
  const tag = (format: string) =>
    `<local_datetime millisecond='${at}' format_type='${format}'></local_datetime>`;

  it("shows the time, and a short date, in the zone it is given", () => {
    expect(resolveLocalDatetimes(`请在 ${tag("time")} 前回答`, "zh_cn", "Asia/Shanghai")).toBe(
      "请在 00:10 前回答",
    );
    expect(resolveLocalDatetimes(`by ${tag("time")}`, "en_us", "Europe/Berlin")).toBe("by 17:10");
    expect(resolveLocalDatetimes(tag("date_short"), "en_us", "Asia/Shanghai")).toBe("Dec 1");
    expect(resolveLocalDatetimes(tag("date_short"), "zh_cn", "Asia/Shanghai")).toBe("12月1日");
  });

  it("leaves other text alone", () => {
    expect(resolveLocalDatetimes("&#60;local_datetime>", "zh_cn", "UTC")).toBe("&#60;local_datetime>");
  });
});
