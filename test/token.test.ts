import { describe, expect, it } from "vitest";
import { checkToken, signLinkToken, signToken, verifyToken } from "../src/auth/token.ts";

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
      link: false,
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

describe("issued in the future (issue 24 item 15)", () => {
  const DAY = 86_400_000;

  it("refuses an iat beyond two minutes ahead, and a revocation ends it even once that time has come", async () => {
    // Minted on a machine whose clock is a day ahead, before the user was revoked (generation 0).
    const ahead = signToken(SECRET, "ou_a", NOW + 30 * DAY, NOW + DAY, 0);
    expect(verifyToken(SECRET, ahead, NOW)).toEqual({ ok: false, reason: "token issued in the future" });
    // Revoked at NOW + 1 h (not-before NOW + 1 h, generation 1): the old rule compared only iat and let it
    // back in the next day.
    const revoked = {
      revocation: async () => ({ notBefore: NOW + 3_600_000, generation: 1 }),
      spendLink: async () => true,
    };
    expect(await checkToken(SECRET, ahead, NOW + 2 * DAY, revoked)).toEqual({
      ok: false,
      reason: "token revoked",
    });
    // A token of the current generation works, whatever its iat against the not-before.
    expect(
      (await checkToken(SECRET, signToken(SECRET, "ou_a", NOW + 3 * DAY, NOW, 1), NOW + 2 * DAY, revoked)).ok,
    ).toBe(true);
    // Within the skew is fine (two machines' clocks).
    expect(verifyToken(SECRET, signToken(SECRET, "ou_a", NOW + 1000, NOW + 60_000), NOW).ok).toBe(true);
  });

  it("takes a sign-in link's token only where links are opened", () => {
    const link = signLinkToken(SECRET, "ou_a", NOW + 1000, NOW);
    expect(verifyToken(SECRET, link, NOW)).toEqual({ ok: false, reason: "a sign-in link is not a token" });
    expect(verifyToken(SECRET, link, NOW, { allowLink: true })).toMatchObject({
      ok: true,
      link: true,
    });
    expect(signLinkToken(SECRET, "ou_a", NOW + 1000, NOW)).not.toBe(link);
  });
});
