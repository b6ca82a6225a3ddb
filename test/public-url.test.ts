import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { PublicAddress } from "../src/public-url.ts";

/** The public URL main.ts hands to cards, links and the host guard: PUBLIC_URL, or the port actually bound. */
describe("PublicAddress", () => {
  it("follows the bound port when PUBLIC_URL is unset, and has no address before a PORT=0 listen", () => {
    const address = new PublicAddress(loadConfig({ PORT: "0" }));
    expect(() => address.url()).toThrow(/PORT=0/);
    address.bound(41234);
    expect(address.url()).toBe("http://localhost:41234");
  });

  it("with a fixed PORT, names it before listen too", () => {
    expect(new PublicAddress(loadConfig({ PORT: "4100" })).url()).toBe("http://localhost:4100");
  });

  it("keeps PUBLIC_URL whatever port is bound", () => {
    const address = new PublicAddress(loadConfig({ PORT: "0", PUBLIC_URL: "https://bot.example.com/" }));
    expect(address.url()).toBe("https://bot.example.com");
    address.bound(41234);
    expect(address.url()).toBe("https://bot.example.com");
  });
});
