import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    environment: "node",
    testTimeout: 20_000,
    restoreMocks: true,
    // TEST_SEED replays fast-check properties and seeded PRNGs (test/helpers/random.ts).
    setupFiles: ["test/setup.ts"],
  },
});
