import { onTestFailed } from "vitest";

/**
 * Seeded randomness for race and fuzz tests, so a failure seen once can be run again: every test that
 * draws jitter or orderings takes a PRNG from `testRandom()`, seeded from `TEST_SEED` when it is set and
 * from a fresh seed otherwise, and a failing test prints the seed to replay with. fast-check properties
 * take the same TEST_SEED (test/setup.ts) and print their own seed and path on failure.
 */

/** The seed a run was asked to replay, if any. */
export function requestedSeed(): number | undefined {
  const raw = process.env.TEST_SEED;
  if (raw === undefined || raw.trim() === "") return undefined;
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed))
    throw new Error(`TEST_SEED must be an integer, not ${JSON.stringify(raw)}`);
  return seed;
}

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface TestRandom {
  seed: number;
  /** In [0, 1), like Math.random. */
  random(): number;
  /** An integer in [0, n). */
  int(n: number): number;
}

/** A PRNG for the running test; call it inside the test. Its seed is printed if the test fails. */
export function testRandom(): TestRandom {
  const seed = requestedSeed() ?? Math.floor(Math.random() * 2 ** 31);
  const random = seededRandom(seed);
  onTestFailed(() => {
    console.error(`replay this test's random choices with TEST_SEED=${seed}`);
  });
  return { seed, random, int: (n) => Math.floor(random() * n) };
}
