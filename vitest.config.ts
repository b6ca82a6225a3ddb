import os from "node:os";
import { defineConfig } from "vitest/config";

/**
 * Two groups, one after the other. Most files wait on I/O or fake time rather than compute (the whole suite
 * used 0.8 of 2 cores at one worker per core), so they run at two workers per core. The files that start the
 * bot as a child process, kill it, drive a browser or measure the platform's faults on the wall clock run
 * after them, at one worker per core as before: they are the ones that share the machine badly.
 */
const cores = os.availableParallelism();
const WIRE = [
  "test/reliability/**/*.test.ts",
  "test/e2e/**/*.test.ts",
  "test/main-*.test.ts",
  "test/local-restart.test.ts",
  "test/long-connection*.test.ts",
  "test/acp-*.test.ts",
  // Each file starts its own Postgres server (or stops one, or starts child processes on it).
  "test/cluster/**/*.test.ts",
  // Several instances as real processes on one Postgres, killed with SIGKILL (issue 27).
  "test/instances-process.test.ts",
  "test/instances-outage.test.ts",
  "test/chaos/**/*.test.ts",
];

export default defineConfig({
  test: {
    environment: "node",
    testTimeout: 20_000,
    restoreMocks: true,
    // TEST_SEED replays fast-check properties and seeded PRNGs (test/helpers/random.ts).
    setupFiles: ["test/setup.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: WIRE,
          maxWorkers: Math.min(8, cores * 2),
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "wire",
          include: WIRE,
          maxWorkers: Math.min(8, cores),
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
