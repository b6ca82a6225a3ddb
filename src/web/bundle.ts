import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/**
 * The pages' TypeScript for the browser: each page script (an entry under a public/ folder) bundled by
 * esbuild with everything it imports — its own modules, the server's shared rules (asks/answer-rule.ts) and
 * markdown-it from node_modules — into one self-contained ES module. So the browser runs the very code that
 * `tsc -p tsconfig.browser.json` checked, and a rule has one owner on both sides.
 *
 * Built on first request and kept for the life of the process, not at start-up: most processes (every test
 * that creates an app, a bot nobody opens the console of) never serve a page, and would otherwise each start
 * esbuild's service process and spend 40–70 ms of CPU (measured on the 2-core build machine: session.js
 * 168 KiB, console.js 183 KiB) for nothing; the first page load pays it once, later ones take the kept
 * bytes. The sources do not change under a running server; `npm run dev` restarts it.
 * A failed build is not kept, so the next request tries again (and the error reaches the express handler).
 */

const builds = new Map<string, Promise<Buffer>>();

/**
 * Where `npm run build` put the entry's bundle: `dist/…/public/session.js` beside where `session.ts` would be.
 * The compiled service has no TypeScript to bundle, and builds nothing at run time.
 */
export function prebuiltBundle(entry: URL): URL {
  return new URL(entry.href.replace(/\.ts$/, ".js"));
}

export function browserBundle(entry: URL): Promise<Buffer> {
  const key = entry.href;
  let pending = builds.get(key);
  if (!pending) {
    const prebuilt = prebuiltBundle(entry);
    pending =
      !fs.existsSync(entry) && fs.existsSync(prebuilt) ? fs.promises.readFile(prebuilt) : bundle(entry);
    builds.set(key, pending);
    pending.catch(() => builds.delete(key));
  }
  return pending;
}

export async function bundle(entry: URL): Promise<Buffer> {
  const result = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    format: "esm",
    platform: "browser",
    // What the pages already used (private fields, top-level await are not needed): any current browser.
    target: "es2022",
    charset: "utf8",
    // Whitespace and comments out (markdown-it's docs are most of its size); names kept, so a stack trace
    // or a look at the served file still reads.
    minifyWhitespace: true,
    // Licence banners of bundled libraries stay, at the end of the file.
    legalComments: "eof",
    write: false,
    logLevel: "silent",
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error(`esbuild produced no output for ${entry.pathname}`);
  return Buffer.from(output.contents);
}
