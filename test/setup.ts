import { requestedSeed } from "./helpers/random.ts";

/**
 * Runs before every test file (vitest.config.ts setupFiles). `TEST_SEED=<n>` replays a run: fast-check
 * properties start from that seed (a failing property prints its seed), as do testRandom() PRNGs.
 * fast-check is loaded only then, so the files that do not use it do not pay for it.
 */
const seed = requestedSeed();
if (seed !== undefined) {
  const { default: fc } = await import("fast-check");
  fc.configureGlobal({ seed });
}
