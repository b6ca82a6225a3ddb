import { describe, expect, it } from "vitest";
import { signToken, verifyToken } from "../src/auth/token.ts";

const SECRET = "a-test-secret-of-enough-length";
const NOW = 1_800_000_000_000;

describe("user tokens", () => {
  it("round-trips a user id until it expires", () => {
    const token = signToken(SECRET, "ou_a", NOW + 1000, NOW - 5);
    expect(verifyToken(SECRET, token, NOW)).toEqual({
      ok: true,
      userId: "ou_a",
      expiresAt: NOW + 1000,
      issuedAt: NOW - 5,
    });
    expect(verifyToken(SECRET, token, NOW + 1000)).toEqual({ ok: false, reason: "token expired" });
  });

  it("refuses a token signed with another secret, a tampered payload, and garbage", () => {
    const token = signToken(SECRET, "ou_a", NOW + 1000);
    expect(verifyToken("another-secret-entirely", token, NOW)).toEqual({
      ok: false,
      reason: "bad signature",
    });
    const [version, , signature] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ sub: "ou_boss", exp: NOW + 1000 })).toString("base64url");
    expect(verifyToken(SECRET, `${version}.${forged}.${signature}`, NOW)).toEqual({
      ok: false,
      reason: "bad signature",
    });
    expect(verifyToken(SECRET, "garbage", NOW)).toEqual({ ok: false, reason: "malformed token" });
    expect(verifyToken(SECRET, "v1..", NOW)).toEqual({ ok: false, reason: "bad signature" });
  });
});
