import { execFile } from "node:child_process";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createCore } from "../src/core.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { createLogger } from "../src/logger.ts";
import { openDatabase } from "../src/store/db.ts";

/**
 * The container files (issue 28): Dockerfile, .dockerignore, docker-compose.yml and the Helm chart. No
 * container engine and no helm binary run on the machines this project is tested on, so they are checked by
 * structure: a small Dockerfile parser (one instruction per line, `\` continuations, comments), a reader of
 * the YAML subset the compose file and the chart's values use (it refuses anything else), and the chart's
 * guard evaluated by a reader of the few template actions it is written in. The health check's own command
 * is run against the real /healthz route.
 */

const root = path.resolve(import.meta.dirname, "..");
const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8");
const CHART = "deploy/helm/feishu-progress-bot";

// ---- Dockerfile ----

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Instructions in order: comment and blank lines dropped (inside continuations too), `\` at a line's end joins the next. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending: string | undefined;
  let start = 0;
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trimEnd();
    // Comment and blank lines are skipped, inside a continuation too (as docker does).
    if (/^\s*#/.test(line) || line.trim() === "") return;
    if (pending === undefined) {
      start = index + 1;
      pending = "";
    }
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    pending += line;
    const match = /^\s*([A-Za-z]+)\s+([\s\S]+)$/.exec(pending);
    if (!match?.[1] || !match[2]) throw new Error(`Dockerfile line ${start}: not an instruction: ${pending}`);
    out.push({ keyword: match[1].toUpperCase(), args: match[2].replace(/\s+/g, " ").trim(), line: start });
    pending = undefined;
  });
  if (pending !== undefined) throw new Error(`Dockerfile line ${start}: a continuation runs off the end`);
  return out;
}

interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

function stagesOf(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const words = instruction.args.split(" ").filter((word) => !word.startsWith("--"));
      const as = words.findIndex((word) => word.toUpperCase() === "AS");
      stages.push({
        image: words[0] ?? "",
        ...(as >= 0 && words[as + 1] ? { name: words[as + 1] } : {}),
        instructions: [],
      });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} before FROM`);
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/** `--flag=value` words in front, then the rest. */
function flagsOf(args: string): { flags: Record<string, string>; rest: string[] } {
  const words = args.split(" ");
  const flags: Record<string, string> = {};
  while (words[0]?.startsWith("--")) {
    const [name, value] = (words.shift() ?? "").slice(2).split("=", 2);
    flags[name ?? ""] = value ?? "";
  }
  return { flags, rest: words };
}

function copiesOf(stage: Stage): { from?: string; sources: string[]; dest: string }[] {
  return stage.instructions
    .filter((i) => i.keyword === "COPY" || i.keyword === "ADD")
    .map((i) => {
      if (i.args.trimStart().startsWith("["))
        throw new Error(`line ${i.line}: the JSON form of COPY is not read here`);
      const { flags, rest } = flagsOf(i.args);
      const dest = rest.pop() ?? "";
      return { ...(flags.from ? { from: flags.from } : {}), sources: rest, dest };
    });
}

/** The value an `ENV KEY=value` (or `ENV KEY value`) of the stage gives, the last one winning. */
function envOf(stage: Stage, key: string): string | undefined {
  let value: string | undefined;
  for (const i of stage.instructions.filter((x) => x.keyword === "ENV")) {
    const pairs = [...i.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)];
    if (pairs.length === 0) {
      const [name, ...rest] = i.args.split(" ");
      if (name === key) value = rest.join(" ");
    }
    for (const [, name, raw] of pairs) if (name === key) value = (raw ?? "").replace(/^"(.*)"$/, "$1");
  }
  return value;
}

const args = (stage: Stage, keyword: string) =>
  stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

/** The stage's WORKDIR (its last one: these stages set one, before any COPY), against which relative paths land. */
function workdirOf(stage: Stage): string {
  const dirs = args(stage, "WORKDIR");
  return dirs.at(-1) ?? "/";
}

/** .dockerignore patterns as regexes over a context-relative path (a pattern also covers what is under it). */
function dockerignore(text: string): RegExp[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((pattern) => {
      if (pattern.startsWith("!")) throw new Error(`.dockerignore exceptions (${pattern}) are not read here`);
      const body = pattern
        .replace(/^\/+|\/+$/g, "")
        .split("")
        .map((c) => (c === "*" ? "[^/]*" : c === "?" ? "[^/]" : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
        .join("")
        .replace(/\[\^\/\]\*\[\^\/\]\*/g, ".*");
      return new RegExp(`^${body}(/.*)?$`);
    });
}

const dockerfile = parseDockerfile(read("Dockerfile"));
const stages = stagesOf(dockerfile);
const runtime = stages.at(-1) as Stage;

describe("Dockerfile", () => {
  it("is read as instructions, continuations joined", () => {
    // The parser itself, on a sample: a comment inside a continuation is dropped, as docker drops it.
    const sample = parseDockerfile('# c\nFROM a AS b\nRUN one \\\n  # note\n  two\n\nCMD ["x"]\n');
    expect(sample.map((i) => `${i.keyword} ${i.args}`)).toEqual(["FROM a AS b", "RUN one two", 'CMD ["x"]']);
    expect(() => parseDockerfile("FROM a\nRUN x \\\n")).toThrow(/runs off the end/);
    expect(stages.length).toBeGreaterThanOrEqual(2);
  });

  it("builds on Node 20 in every stage", () => {
    for (const stage of stages) expect(stage.image).toMatch(/^node:20([.-]|$)/);
  });

  it("compiles in a builder stage: the toolchain for better-sqlite3, npm ci, npm run build, dev deps pruned", () => {
    const build = stages.find((stage) => args(stage, "RUN").some((run) => /\bnpm run build\b/.test(run)));
    expect(build, "a stage that runs npm run build").toBeDefined();
    expect(build).not.toBe(runtime);
    const runs = args(build as Stage, "RUN").join("\n");
    for (const tool of ["python3", "make", "g++"]) expect(runs).toContain(tool);
    expect(runs).toMatch(/\bnpm ci\b/);
    const afterBuild = runs.slice(runs.indexOf("npm run build"));
    expect(afterBuild).toMatch(/npm prune --omit=dev|npm ci --omit=dev/);
    // The runtime stage compiles nothing.
    expect(args(runtime, "RUN").join("\n")).not.toMatch(/g\+\+|npm (ci|install)\b/);
  });

  it("runs as a non-root user in the final stage", () => {
    const user = args(runtime, "USER").at(-1);
    expect(user, "a USER in the final stage").toBeDefined();
    expect((user ?? "").split(":")[0]).not.toMatch(/^(root|0)$/);
    // The user is the last word: nothing after it runs as root.
    const last = runtime.instructions.findLastIndex((i) => i.keyword === "USER");
    expect(runtime.instructions.slice(last).some((i) => i.keyword === "RUN")).toBe(false);
  });

  it("keeps DATA_DIR on a volume, exposes the default port, leaves HOST unset", () => {
    const dataDir = envOf(runtime, "DATA_DIR");
    expect(dataDir).toBe("/data");
    expect(args(runtime, "VOLUME").flatMap((v) => v.replace(/[[\]",]/g, " ").split(" "))).toContain(dataDir);
    const port = envOf(runtime, "PORT") ?? String(loadConfig({}).port);
    expect(args(runtime, "EXPOSE")).toContain(port);
    expect(loadConfig({}).port).toBe(3000);
    // Feishu mode with HOST unset listens on every interface (what a container needs); the image sets no HOST.
    const feishu = loadConfig({
      FEISHU_APP_ID: "cli_a",
      FEISHU_APP_SECRET: "s",
      AUTH_SECRET: "x".repeat(32),
    });
    expect(feishu.host).toBeUndefined();
    expect(envOf(runtime, "HOST")).toBeUndefined();
  });

  it("starts node dist/main.js in exec form, and stops it with SIGTERM", () => {
    const cmd = args(runtime, "CMD").at(-1) ?? "";
    expect(JSON.parse(cmd)).toEqual(["node", "dist/main.js"]);
    expect(args(runtime, "ENTRYPOINT")).toEqual([]);
    expect(args(runtime, "STOPSIGNAL").at(-1)).toBe("SIGTERM");
    expect(workdirOf(runtime)).toBe("/app");
  });

  it("copies into the runtime stage only what exists or the build produces, dist/main.js included", () => {
    const byName = new Map(stages.flatMap((stage) => (stage.name ? [[stage.name, stage] as const] : [])));
    const copied = copiesOf(runtime);
    const targets = new Set<string>();
    for (const copy of copied) {
      expect(copy.from, `COPY ${copy.sources.join(" ")}: from the builder`).toBeDefined();
      const from = byName.get(copy.from ?? "") as Stage;
      expect(from).toBeDefined();
      const dir = workdirOf(from);
      const fromCopies = copiesOf(from).flatMap((c) =>
        c.sources.map((source) =>
          c.dest.endsWith("/") || c.dest === "." || c.dest === "./"
            ? path.posix.join(dir, c.dest, path.posix.basename(source))
            : path.posix.join(dir, c.dest),
        ),
      );
      const runs = args(from, "RUN").join("\n");
      for (const source of copy.sources) {
        const at = path.posix.resolve(dir, source);
        const relative = path.posix.relative(dir, at);
        const produced =
          fromCopies.includes(at) ||
          (relative === "node_modules" && /\bnpm ci\b/.test(runs)) ||
          (relative === "dist" &&
            /\bnpm run build\b/.test(runs) &&
            /"build": "tsx scripts\/build\.ts"/.test(read("package.json")) &&
            read("scripts/build.ts").includes('"dist"'));
        expect(produced, `${source} in stage ${copy.from}`).toBe(true);
        targets.add(path.posix.resolve(workdirOf(runtime), copy.dest));
      }
    }
    // What `node dist/main.js` needs: the code, its production dependencies, package.json ("type": "module"),
    // and the manifest it reads at run time (feishu/app-manifest.ts finds it above dist/).
    for (const needed of ["dist", "node_modules", "package.json", "feishu-app.json"])
      expect([...targets], needed).toContain(`/app/${needed}`);
  });

  it("takes every builder input from the context, none of them left out by .dockerignore", () => {
    const ignored = dockerignore(read(".dockerignore"));
    for (const pattern of ["node_modules", "dist", "data", ".git", "test-artifacts", ".env"])
      expect(
        ignored.some((re) => re.test(pattern)),
        `.dockerignore leaves out ${pattern}`,
      ).toBe(true);
    const sources = stages.flatMap((stage) =>
      copiesOf(stage)
        .filter((copy) => copy.from === undefined)
        .flatMap((copy) => copy.sources),
    );
    expect(sources).toEqual(expect.arrayContaining(["package-lock.json", "src", "scripts"]));
    for (const source of sources) {
      expect(fs.existsSync(path.join(root, source)), `${source} exists`).toBe(true);
      expect(
        ignored.some((re) => re.test(source.replace(/^\.\//, ""))),
        `${source} is not in .dockerignore`,
      ).toBe(false);
    }
  });

  it("keeps the runtime's imports in dependencies (the image prunes devDependencies)", () => {
    const pkg = JSON.parse(read("package.json")) as { dependencies: Record<string, string> };
    const files = fs
      .readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !/(^|\/)public\//.test(file));
    const imported = new Set<string>();
    for (const file of files) {
      const text = fs.readFileSync(path.join(root, "src", file), "utf8");
      for (const match of text.matchAll(
        /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;]*?\bfrom\s+)?"([^"]+)"/g,
      ))
        if (!match[1]) imported.add(match[2] ?? "");
      for (const match of text.matchAll(/\bimport\("([^"]+)"\)/g)) imported.add(match[1] ?? "");
    }
    const packages = [...imported]
      .filter((spec) => !spec.startsWith(".") && !spec.startsWith("node:"))
      .map((spec) => /^(@[^/]+\/[^/]+|[^/]+)/.exec(spec)?.[1] ?? spec);
    // esbuild among them: web/bundle.ts loads it, even though the built service never bundles at run time.
    expect(packages).toContain("esbuild");
    for (const name of new Set(packages)) expect(Object.keys(pkg.dependencies), name).toContain(name);
  });

  it("checks health with node on /healthz: exit 0 while the bot answers, 1 when it does not", async () => {
    const healthcheck = args(runtime, "HEALTHCHECK").at(-1) ?? "";
    const { rest } = flagsOf(healthcheck);
    expect(rest[0]).toBe("CMD");
    const argv = JSON.parse(rest.slice(1).join(" ")) as string[];
    expect(argv[0]).toBe("node");
    expect(argv.join(" ")).toContain("/healthz");
    expect(argv.join(" ")).not.toMatch(/\b(curl|wget)\b/);

    const logger = createLogger({ level: "silent" });
    const db = openDatabase(":memory:");
    const core = await createCore({
      db,
      logger,
      agent: createDemoAgent(),
      tools: createDemoTools({ stepMs: 0 }),
      askTimeoutMs: 60_000,
      authSecret: "deploy-files-test-secret-0123456789",
    });
    const { server } = createApp({
      ...core,
      logger,
      hostPolicy: { publicUrl: () => "https://bot.example.com" },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const run = () =>
      new Promise<number>((resolve) => {
        execFile(process.execPath, argv.slice(1), { env: { PORT: String(port) }, timeout: 10_000 }, (error) =>
          resolve(error ? Number(error.code ?? 1) : 0),
        );
      });
    try {
      expect(await run()).toBe(0);
    } finally {
      await core.hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
    }
    expect(await run()).toBe(1);
  });
});

// ---- YAML (the subset these files are written in) ----

type Yaml = string | number | boolean | null | Yaml[] | { [key: string]: Yaml };

/** Drops a `#` comment that starts a line or follows a space, outside quotes. */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(line[i - 1] ?? ""))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

function scalar(text: string, where: number): Yaml {
  if (text.startsWith('"')) return JSON.parse(text) as string;
  if (text.startsWith("'")) return text.slice(1, -1).replace(/''/g, "'");
  if (text === "{}") return {};
  if (text === "[]") return [];
  if (/^[[{&*|>!%@`]/.test(text)) throw new Error(`YAML line ${where}: "${text}" is beyond this reader`);
  if (/^-?\d+$/.test(text)) return Number(text);
  if (text === "true" || text === "false") return text === "true";
  if (text === "null" || text === "~") return null;
  return text;
}

const KEY = /^("[^"]*"|[A-Za-z0-9_./-]+):(?:\s+(.*))?$/;

/** Block maps and lists, scalars, comments; anything else (anchors, flow collections, block scalars) throws. */
function readYaml(text: string): Yaml {
  const lines = text
    .split(/\r?\n/)
    .map((raw, index) => ({ raw: stripComment(raw), number: index + 1 }))
    .filter((line) => line.raw.trim() !== "" && line.raw.trim() !== "---")
    .map((line) => {
      if (/^\s*\t/.test(line.raw)) throw new Error(`YAML line ${line.number}: a tab in the indentation`);
      return {
        indent: line.raw.length - line.raw.trimStart().length,
        text: line.raw.trim(),
        number: line.number,
      };
    });
  let i = 0;
  const isItem = (t: string) => t === "-" || t.startsWith("- ");
  const valueAfter = (indent: number): Yaml => {
    const next = lines[i];
    if (next && next.indent > indent) return block(next.indent);
    if (next && next.indent === indent && isItem(next.text)) return list(indent);
    return null;
  };
  function block(indent: number): Yaml {
    const first = lines[i];
    if (!first) return null;
    return isItem(first.text) ? list(indent) : map(indent);
  }
  function map(indent: number): { [key: string]: Yaml } {
    const out: { [key: string]: Yaml } = {};
    for (let line = lines[i]; line && line.indent === indent && !isItem(line.text); line = lines[i]) {
      const match = KEY.exec(line.text);
      if (!match?.[1]) throw new Error(`YAML line ${line.number}: expected "key: value", got ${line.text}`);
      const key = match[1].replace(/^"(.*)"$/, "$1");
      if (key in out) throw new Error(`YAML line ${line.number}: ${key} twice`);
      i += 1;
      out[key] =
        match[2] === undefined || match[2] === "" ? valueAfter(indent) : scalar(match[2], line.number);
    }
    const stray = lines[i];
    if (stray && stray.indent > indent) throw new Error(`YAML line ${stray.number}: unexpected indentation`);
    return out;
  }
  function list(indent: number): Yaml[] {
    const out: Yaml[] = [];
    for (let line = lines[i]; line && line.indent === indent && isItem(line.text); line = lines[i]) {
      const rest = line.text.slice(1).trimStart();
      if (rest === "") {
        i += 1;
        out.push(valueAfter(indent));
      } else if (KEY.test(rest)) {
        // "- key: value": a map whose keys line up with this first one.
        const inner = indent + (line.text.length - rest.length);
        lines[i] = { indent: inner, text: rest, number: line.number };
        out.push(map(inner));
      } else {
        i += 1;
        out.push(scalar(rest, line.number));
      }
    }
    return out;
  }
  const result = block(lines[0]?.indent ?? 0);
  const left = lines[i];
  if (left) throw new Error(`YAML line ${left.number}: not read (${left.text})`);
  return result;
}

/** A path into a read document; undefined where it does not lead anywhere. */
function at(doc: Yaml | undefined, ...keys: (string | number)[]): Yaml | undefined {
  let node = doc;
  for (const key of keys) {
    if (node === null || typeof node !== "object") return undefined;
    node = Array.isArray(node) ? node[Number(key)] : node[String(key)];
  }
  return node;
}

describe("the YAML reader", () => {
  it("reads maps, lists, lists of maps and scalars, and refuses what it does not know", () => {
    expect(
      readYaml('a: 1\nb:\n  - x # note\n  - path: .env\n    required: false\nc: "3:4"\nd:\n  e: {}\n'),
    ).toEqual({ a: 1, b: ["x", { path: ".env", required: false }], c: "3:4", d: { e: {} } });
    expect(() => readYaml("a: [1, 2]\n")).toThrow(/beyond this reader/);
    expect(() => readYaml("a: |\n  text\n")).toThrow(/beyond this reader/);
    expect(() => readYaml("a: 1\n   b: 2\n")).toThrow(/unexpected indentation|not read/);
  });
});

// ---- docker-compose.yml ----

describe("docker-compose.yml", () => {
  const compose = readYaml(read("docker-compose.yml"));
  const bot = at(compose, "services", "bot");

  it("builds the bot from the Dockerfile, with .env and a named volume on DATA_DIR", () => {
    expect(at(bot, "build")).toBe(".");
    const envFiles = at(bot, "env_file");
    expect(
      Array.isArray(envFiles) ? envFiles.map((e) => (typeof e === "string" ? e : at(e, "path"))) : [envFiles],
    ).toContain(".env");
    const dataDir = at(bot, "environment", "DATA_DIR") ?? envOf(runtime, "DATA_DIR");
    const mounts = (at(bot, "volumes") as Yaml[]).map(String);
    const mount = mounts.find((m) => m.split(":")[1] === dataDir);
    expect(mount, `a volume on ${String(dataDir)}`).toBeDefined();
    const volume = (mount ?? "").split(":")[0] ?? "";
    // Named (declared at the top level), not a path on the host.
    expect(volume).not.toMatch(/^[./~]/);
    expect(Object.keys((at(compose, "volumes") as object | null) ?? {})).toContain(volume);
    const exposed = args(runtime, "EXPOSE").at(-1);
    expect((at(bot, "ports") as Yaml[]).map(String).some((p) => p.endsWith(`:${exposed}`))).toBe(true);
  });

  it("lets the bot drain: exec'd by an init, a grace period above its 8 s deadline", () => {
    expect(at(bot, "init")).toBe(true);
    expect(Number.parseInt(String(at(bot, "stop_grace_period")), 10)).toBeGreaterThan(8);
    expect(at(bot, "command")).toBeUndefined();
  });

  it("keeps Postgres behind a profile and says the bot does not use it yet", () => {
    const services = Object.keys((at(compose, "services") as object) ?? {});
    for (const name of services.filter((s) => s !== "bot")) {
      const profiles = at(compose, "services", name, "profiles");
      expect(Array.isArray(profiles) && profiles.length > 0, `${name} is behind a profile`).toBe(true);
    }
    expect(at(compose, "services", "postgres", "image")).toMatch(/^postgres:/);
    // Nothing wires the bot to it: no DATABASE_URL on the bot, and the file says so.
    expect(JSON.stringify(bot)).not.toContain("DATABASE_URL");
    expect(read("docker-compose.yml")).toMatch(/NOT wired yet[\s\S]*does not read DATABASE_URL/);
  });
});

// ---- the Helm chart ----

/**
 * The guard's template, evaluated: `if` / `end` around `fail`, with conditions of the forms the guard uses
 * (`gt (int .Values.x) N`, `not .Values.x`) and `fail "…"` or `fail (printf "…" …)`. Any other action throws,
 * so a guard rewritten in another form fails here until this reader learns it.
 */
function evaluateGuard(template: string, values: Record<string, unknown>): string | undefined {
  const actions = [...template.matchAll(/\{\{-?\s*([\s\S]*?)\s*-?\}\}/g)].map((m) => m[1] ?? "");
  const value = (ref: string) => {
    const match = /^\.Values\.([A-Za-z0-9_]+)$/.exec(ref);
    if (!match?.[1]) throw new Error(`guard: unknown reference ${ref}`);
    return values[match[1]];
  };
  const truthy = (v: unknown) => v !== undefined && v !== null && v !== "" && v !== 0 && v !== false;
  const condition = (text: string): boolean => {
    let match = /^gt \(int (\S+)\) (\d+)$/.exec(text);
    if (match?.[1] && match[2]) return Math.trunc(Number(value(match[1]) ?? 0)) > Number(match[2]);
    match = /^not (\S+)$/.exec(text);
    if (match?.[1]) return !truthy(value(match[1]));
    throw new Error(`guard: unknown condition ${text}`);
  };
  const live: boolean[] = [];
  for (const action of actions) {
    if (action.startsWith("/*")) continue;
    if (/^define "[^"]+"$/.test(action)) continue;
    const running = live.every(Boolean);
    if (action.startsWith("if ")) live.push(running && condition(action.slice(3)));
    else if (action === "end") live.pop();
    else if (action.startsWith("fail ")) {
      if (!running) continue;
      const quoted = /^fail (?:\(printf )?"((?:[^"\\]|\\.)*)"/.exec(action);
      if (!quoted?.[1]) throw new Error(`guard: unknown fail ${action}`);
      return quoted[1].replace(/%d/g, String(values.replicaCount));
    } else throw new Error(`guard: unknown action ${action}`);
  }
  return undefined;
}

describe("the Helm chart", () => {
  const helpers = read(`${CHART}/templates/_helpers.tpl`);
  const deployment = read(`${CHART}/templates/deployment.yaml`);
  const values = readYaml(read(`${CHART}/values.yaml`));
  const guardStart = helpers.indexOf('{{- define "feishu-progress-bot.guards" -}}');
  // The guard's definition: up to the next one, or the end of the file.
  const nextDefine = helpers.indexOf("{{- define ", guardStart + 1);
  const guard = helpers.slice(guardStart, nextDefine < 0 ? undefined : nextDefine);

  it("is a v2 chart whose values start at one replica with no database", () => {
    const chart = readYaml(read(`${CHART}/Chart.yaml`));
    expect(at(chart, "apiVersion")).toBe("v2");
    expect(at(chart, "name")).toBe("feishu-progress-bot");
    expect(at(values, "replicaCount")).toBe(1);
    expect(at(values, "databaseUrl")).toBe("");
    for (const file of ["service.yaml", "pvc.yaml", "secret.yaml"])
      expect(fs.existsSync(path.join(root, CHART, "templates", file)), file).toBe(true);
  });

  it("refuses replicaCount > 1 without databaseUrl, with Helm's fail, in the template it renders", () => {
    expect(guardStart).toBeGreaterThanOrEqual(0);
    expect(guard).toContain("fail");
    expect(guard).toContain(".Values.replicaCount");
    expect(guard).toContain(".Values.databaseUrl");
    // The Deployment renders the guard (an include at its top), so `helm install` stops there.
    expect(deployment.split("\n")[0]).toBe('{{- include "feishu-progress-bot.guards" . }}');
    expect(evaluateGuard(guard, { replicaCount: 1, databaseUrl: "" })).toBeUndefined();
    expect(evaluateGuard(guard, { replicaCount: 2, databaseUrl: "" })).toMatch(
      /needs databaseUrl \(DATABASE_URL\)/,
    );
    // With Postgres, several instances serve one app (docs/several-instances.md).
    expect(evaluateGuard(guard, { replicaCount: 3, databaseUrl: "postgres://db/fpb" })).toBeUndefined();
    expect(() => evaluateGuard('{{- if eq 1 1 }}{{ fail "x" }}{{- end }}', {})).toThrow(/unknown condition/);
  });

  it("runs one pod at a time on its PVC, or rolls pods on emptyDirs with Postgres; non-root, probed", () => {
    // Each branch of the strategy, the volume and the PVC, picked by databaseUrl.
    expect(deployment).toMatch(
      /strategy:\n\s+\{\{- if \.Values\.databaseUrl \}\}\n(\s+#.*\n)*\s+type: RollingUpdate\n\s+rollingUpdate:\n\s+maxUnavailable: 0\n/,
    );
    expect(deployment).toMatch(/\{\{- else \}\}\n(\s+#.*\n)*\s+type: Recreate\n\s+\{\{- end \}\}/);
    expect(deployment).toMatch(
      /- name: data\n\s+\{\{- if \.Values\.databaseUrl \}\}\n(\s+#.*\n)*\s+emptyDir: \{\}\n\s+\{\{- else \}\}\n\s+persistentVolumeClaim:/,
    );
    expect(read(`${CHART}/templates/pvc.yaml`).split("\n")[0]).toBe("{{- if not .Values.databaseUrl }}");
    expect(deployment).toMatch(/runAsNonRoot: true/);
    const uid = /runAsUser: (\d+)/.exec(deployment)?.[1];
    expect(Number(uid)).toBeGreaterThan(0);
    for (const [probe, route] of [
      ["startupProbe", "/healthz"],
      ["livenessProbe", "/healthz"],
      ["readinessProbe", "/readyz"],
    ])
      expect(deployment).toMatch(new RegExp(`${probe}:\\n\\s+httpGet:\\n\\s+path: ${route}\\n`));
    expect(deployment).toMatch(/- name: data\n\s+mountPath: \/data\n/);
    expect(deployment).toMatch(
      /persistentVolumeClaim:\n\s+claimName: \{\{ include "feishu-progress-bot.fullname" \. \}\}-data/,
    );
    expect(read(`${CHART}/templates/pvc.yaml`)).toMatch(
      /kind: PersistentVolumeClaim[\s\S]*name: \{\{ include "feishu-progress-bot.fullname" \. \}\}-data/,
    );
    expect(deployment).toMatch(/envFrom:\n\s+- secretRef:/);
    expect(deployment).toContain(`containerPort: ${args(runtime, "EXPOSE").at(-1)}`);
  });
});
