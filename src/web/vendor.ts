import fs from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * markdown-it for the browser. The pages load `./markdown-it.js` beside markdown.js; on disk that file
 * re-exports the npm package (which Node resolves), so the server answers its URL with the browser build the
 * package itself ships (`markdown-it/browser`: one self-contained ES module). The installed version, nothing
 * copied into the repository, nothing from a CDN. Read once, on first request, and kept.
 */
export const MARKDOWN_IT_FILE = "markdown-it.js";

let bundle: Buffer | undefined;

export function markdownItBundle(): Buffer {
  if (!bundle) {
    const file = fileURLToPath(import.meta.resolve("markdown-it/browser"));
    // Its source map is not served; without the comment a browser does not ask for it.
    const code = fs.readFileSync(file, "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
    bundle = Buffer.from(code);
  }
  return bundle;
}
