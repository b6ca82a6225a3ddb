/** Code-fence languages for the card's markdown component. Pure. */

/**
 * Languages the markdown component highlights, by their documented names (富文本 §代码块支持的编程语言,
 * case-insensitive), plus common aliases models write. Anything else is dropped: a plain fence.
 */
const LANGUAGES = new Set(
  (
    "plain_text abap ada apache apex assembly bash c_sharp cpp c cmake cobol css coffee_script d dart delphi " +
    "diff django docker_file erlang fortran gherkin go graphql groovy html htmlbars http haskell json java " +
    "javascript julia kotlin latex lisp lua matlab makefile markdown nginx objective_c " +
    "opengl_shading_language php perl powershell prolog properties protobuf python r ruby rust sas scss sql " +
    "scala scheme shell solidity swift toml thrift typescript vbscript visual_basic xml yaml"
  ).split(" "),
);
const ALIASES: Record<string, string> = {
  dockerfile: "docker_file",
  docker: "docker_file",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  node: "javascript",
  ts: "typescript",
  tsx: "typescript",
  py: "python",
  python3: "python",
  sh: "shell",
  zsh: "shell",
  console: "shell",
  "shell-session": "shell",
  ps1: "powershell",
  cs: "c_sharp",
  csharp: "c_sharp",
  "c#": "c_sharp",
  "c++": "cpp",
  cc: "cpp",
  h: "c",
  objc: "objective_c",
  "objective-c": "objective_c",
  objectivec: "objective_c",
  coffee: "coffee_script",
  coffeescript: "coffee_script",
  golang: "go",
  rs: "rust",
  rb: "ruby",
  kt: "kotlin",
  kts: "kotlin",
  yml: "yaml",
  md: "markdown",
  tex: "latex",
  vb: "visual_basic",
  "vb.net": "visual_basic",
  vbnet: "visual_basic",
  glsl: "opengl_shading_language",
  jsonc: "json",
  json5: "json",
  text: "plain_text",
  txt: "plain_text",
  plain: "plain_text",
  plaintext: "plain_text",
  make: "makefile",
  proto: "protobuf",
  gql: "graphql",
  svg: "xml",
  ini: "properties",
  asm: "assembly",
  patch: "diff",
};

/** The documented name for a fence's info string, or undefined (no language). */
export function codeLanguage(info: string): string | undefined {
  const word = info.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (word === "") return undefined;
  if (LANGUAGES.has(word)) return word;
  return ALIASES[word];
}
