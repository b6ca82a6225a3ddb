/**
 * markdown-it, for markdown.js. Node (tests) resolves this re-export to the installed package; a browser
 * never receives this file: the server answers its URL with markdown-it bundled for the browser
 * (src/web/vendor.ts), so both pages run the same library Node does.
 */
export { default } from "markdown-it";
