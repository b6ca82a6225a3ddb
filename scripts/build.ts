import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { bundle } from "../src/web/bundle.ts";

/**
 * `npm run build`: the service as plain JavaScript in dist/ (tsc, relative `.ts` imports rewritten to `.js`),
 * the pages' assets copied beside it, and each page script bundled ahead (web/bundle.ts serves those), so
 * `node dist/main.js` needs neither tsx nor esbuild at run time.
 */

const root = path.resolve(import.meta.dirname, "..");
/** `--out <dir>`: somewhere else than dist/ (the production-start test builds into test-artifacts/). */
const outFlag = process.argv.indexOf("--out");
const dist = path.resolve(root, outFlag >= 0 ? (process.argv[outFlag + 1] ?? "dist") : "dist");

/** The browser entries (their pages load these); test/production-start.test.ts serves them from dist. */
const BROWSER_ENTRIES = [
  "web/public/session.ts",
  "local/console/public/console.ts",
  "local/console/public/agent-panel.ts",
];
const PUBLIC_DIRS = ["web/public", "local/console/public"];

fs.rmSync(dist, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", dist],
  {
    cwd: root,
    stdio: "inherit",
  },
);
for (const dir of PUBLIC_DIRS) {
  const from = path.join(root, "src", dir);
  fs.mkdirSync(path.join(dist, dir), { recursive: true });
  for (const file of fs.readdirSync(from))
    if (!file.endsWith(".ts")) fs.copyFileSync(path.join(from, file), path.join(dist, dir, file));
}
for (const entry of BROWSER_ENTRIES) {
  const code = await bundle(pathToFileURL(path.join(root, "src", entry)));
  fs.writeFileSync(path.join(dist, entry.replace(/\.ts$/, ".js")), code);
}
process.stdout.write(`built ${path.relative(root, dist)}/ (start it with: node dist/main.js)\n`);
