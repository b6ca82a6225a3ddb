import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { PG_MIGRATIONS } from "../src/store/pg-schema.ts";
import { TABLE_OWNERS } from "../src/store/tables.ts";

/**
 * The pure core imports no I/O (DESIGN §2): the ask schema, the answer checks, and (when present)
 * the card builders. They must run anywhere — a test, a benchmark, a browser.
 */
const PURE = [
  "src/asks/schema.ts",
  "src/asks/answers.ts",
  "src/asks/answer-rule.ts",
  "src/util/text.ts",
  "src/util/json.ts",
];
const PURE_DIRS = ["src/cards", "src/strings"];
const FORBIDDEN = [
  /@larksuiteoapi/,
  /^express/,
  /^ws$/,
  /^pino/,
  /^node:/,
  /^fs$/,
  /^better-sqlite3/,
  /^http$/,
  /^net$/,
];

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(dir, file));
}

function imports(file: string): string[] {
  const source = fs.readFileSync(file, "utf8");
  return [...source.matchAll(/\bfrom\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map(
    (m) => m[1] ?? m[2] ?? "",
  );
}

describe("pure core boundary", () => {
  const files = [...PURE, ...PURE_DIRS.flatMap(filesUnder)];

  it.each(files)("%s imports no SDK, server, socket, logger or file system", (file) => {
    const bad = imports(file).filter((spec) => FORBIDDEN.some((pattern) => pattern.test(spec)));
    expect(bad).toEqual([]);
  });

  it.each(["src/asks/answer-rule.ts", "src/util/text.ts", "src/local/emulator/card-checker/enums.ts"])(
    "%s, bundled into a page, imports nothing at all",
    (file) => {
      expect(imports(file)).toEqual([]);
    },
  );

  it("only src/feishu imports the Lark SDK", () => {
    const offenders = filesUnder("src")
      .filter((file) => !file.startsWith(path.join("src", "feishu")))
      .filter((file) => imports(file).some((spec) => spec.startsWith("@larksuiteoapi")));
    expect(offenders).toEqual([]);
  });

  it("only main.ts and CLI entry points read process.env", () => {
    const offenders = filesUnder("src")
      .filter((file) => !["src/main.ts"].includes(file) && !file.startsWith(path.join("src", "cli")))
      .filter((file) => fs.readFileSync(file, "utf8").includes("process.env"));
    expect(offenders).toEqual([]);
  });
});

/**
 * The dependency rule (ARCHITECTURE.md): a file may import its own area, any area of a LOWER rank, and the
 * few same-rank neighbours listed in PEERS. Anything else is an upward (or sideways) arrow and fails here.
 * The table is written out on purpose, not derived from the code: moving a file across it is a decision.
 *
 * An area is the first segment under src/: a folder (`feishu`) or a top-level file without `.ts` (`main`).
 */
const LAYERS: readonly (readonly string[])[] = [
  /* 0 foundation */ ["util", "errors", "logger", "strings"],
  /* 1 domain     */ ["domain"],
  /* 2 records    */ ["store", "asks", "cluster"],
  /* 3 views      */ ["cards", "auth"],
  /* 4 engine and channels: the harness runs agents; channels reach it only through domain/ports.ts */
  ["harness", "feishu", "ws", "web", "agents-api"],
  /* 5 settings: parsed once from the environment and the config file (its types may be imported anywhere) */
  ["config", "config-env", "config-file", "config-apps", "config-agent"],
  /* 6 wiring pieces: the core, metrics, the local emulator and console, process plumbing, test doubles */
  [
    "core",
    "ask-wakeups",
    "instances",
    "metrics",
    "local",
    "listen",
    "public-url",
    "process-guard",
    "testing",
  ],
  /* 7 the HTTP app and its routes */
  ["app", "routes"],
  /* 8 entry points */
  ["main", "cli"],
];

/** Same-rank imports that are allowed, each with its reason. */
const PEERS: Readonly<Record<string, readonly string[]>> = {
  // The ask rows are stored by store/asks.ts with the ask schema's types and parsers. The registry keeps them
  // there through a store it is given: it may name the store's types (TYPE_ONLY_PEERS), never import its code,
  // so the two never load each other.
  store: ["asks", "cluster"],
  // The store on Postgres (issue 27) talks to the server the cluster's way: its pool that cannot crash the
  // process, its outage error (503), its migration runner. The cluster never imports the store.
  // The WebSocket upgrade reads the same session cookie as the pages.
  ws: ["web"],
  // One of several instances (issue 27) hands its registry's settles to the others through the ask wake-ups.
  instances: ["ask-wakeups"],
  // The fake messenger reuses the emulator's message store, ids, limits and card checks, so the two
  // platforms a test can run on differ only where the contract suite says they may.
  testing: ["local"],
  // The settings: config.ts parses the variables config-env.ts declares and checks, beside the config file's
  // apps (config-apps.ts builds them from the file config-file.ts parses, whose `env` names config-env's variables).
  // An app's agent (config-agent.ts) is read with the environment's schema, for config.ts and config-apps.ts.
  config: ["config-env", "config-file", "config-apps", "config-agent"],
  "config-apps": ["config-env", "config-file", "config-agent"],
  "config-agent": ["config-env", "config-file"],
  "config-file": ["config-env"],
};

/** Settings shapes are declared once in config.ts: any layer may import its types (values come via deps). */
const TYPE_ONLY_ANYWHERE = new Set(["config"]);

/** Same-rank neighbours whose types (only) may be named; see PEERS for why. */
const TYPE_ONLY_PEERS: Readonly<Record<string, readonly string[]>> = { asks: ["store"] };

const RANK = new Map(LAYERS.flatMap((areas, rank) => areas.map((area) => [area, rank] as const)));

interface Edge {
  /** The importing file, relative to the repository (`src/feishu/channel.ts`). */
  from: string;
  /** The specifier as written. */
  spec: string;
  typeOnly: boolean;
}

function areaOf(fileUnderSrc: string): string {
  const [first = ""] = fileUnderSrc.split("/");
  return first.replace(/\.ts$/, "");
}

/** Why `edge` breaks the rule, or undefined when it keeps it. Packages and node: built-ins are not layers. */
function violation(edge: Edge): string | undefined {
  if (!edge.spec.startsWith(".")) return undefined;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(edge.from), edge.spec));
  if (!target.startsWith("src/")) return `${edge.from} imports ${edge.spec}, outside src/`;
  const from = areaOf(edge.from.slice("src/".length));
  const to = areaOf(target.slice("src/".length));
  if (from === to) return undefined;
  const fromRank = RANK.get(from);
  const toRank = RANK.get(to);
  if (fromRank === undefined) return `${edge.from}: area "${from}" is not in the layer table`;
  if (toRank === undefined)
    return `${edge.from} imports ${edge.spec}: area "${to}" is not in the layer table`;
  if (edge.typeOnly && (TYPE_ONLY_ANYWHERE.has(to) || TYPE_ONLY_PEERS[from]?.includes(to))) return undefined;
  if (toRank < fromRank || PEERS[from]?.includes(to)) return undefined;
  return `${edge.from} (${from}, layer ${fromRank}) imports ${edge.spec} (${to}, layer ${toRank})`;
}

/** Every import, re-export and dynamic import() of a source, read with TypeScript's own parser. */
function edgesOf(file: string, source: string): Edge[] {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const edges: Edge[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      edges.push({ from: file, spec: node.moduleSpecifier.text, typeOnly: importIsTypeOnly(node) });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      edges.push({ from: file, spec: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) edges.push({ from: file, spec: arg.text, typeOnly: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return edges;
}

/** `import type {…}`, or `import { type A, type B }` where every name is a type: erased at run time. */
function importIsTypeOnly(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // a side-effect import runs the module
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return (
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}

describe("the dependency rule", () => {
  const files = filesUnder("src").map((file) => file.split(path.sep).join("/"));

  it("has every area of src/ in its table", () => {
    const unknown = [...new Set(files.map((file) => areaOf(file.slice("src/".length))))].filter(
      (area) => !RANK.has(area),
    );
    expect(unknown).toEqual([]);
  });

  it("finds no upward import anywhere under src/", () => {
    const broken = files.flatMap((file) =>
      edgesOf(file, fs.readFileSync(file, "utf8")).flatMap((edge) => violation(edge) ?? []),
    );
    expect(broken).toEqual([]);
  });

  it("the domain imports only itself (and node:path, pure string work): it runs anywhere", () => {
    const domain = files.filter((file) => file.startsWith("src/domain/"));
    const outside = domain.flatMap((file) =>
      edgesOf(file, fs.readFileSync(file, "utf8"))
        .filter(
          (edge) => !(edge.spec.startsWith("./") && !edge.spec.includes("/", 2)) && edge.spec !== "node:path",
        )
        .map((edge) => `${file}: ${edge.spec}`),
    );
    expect(domain.length).toBeGreaterThan(3);
    expect(outside).toEqual([]);
  });

  it("store, cards, ws and feishu import the domain, never the harness", () => {
    const lower = files.filter((file) => /^src\/(store|cards|ws|feishu)\//.test(file));
    const offenders = lower.filter((file) =>
      edgesOf(file, fs.readFileSync(file, "utf8")).some((edge) =>
        path.posix.join(path.posix.dirname(file), edge.spec).startsWith("src/harness/"),
      ),
    );
    expect(lower.length).toBeGreaterThan(20);
    expect(offenders).toEqual([]);
  });

  // The rule must be able to fail: synthetic sources, parsed the same way as the real ones.
  it.each([
    ["src/store/x.ts", 'import type { SessionRunner } from "../harness/runner.ts";'],
    ["src/domain/x.ts", 'export { strings } from "../strings/index.ts";\nexport * from "../cards/model.ts";'],
    ["src/feishu/x.ts", 'import {\n  type A,\n  helper,\n} from "../harness/tools.ts";'],
    ["src/cards/x.ts", 'const m = await import("../feishu/channel.ts");'],
    ["src/feishu/x.ts", 'import { loadConfig } from "../config.ts";'],
    ["src/harness/x.ts", 'import "../ws/hub.ts";'],
    ["src/ws/x.ts", 'import { startFeishu } from "../feishu/index.ts";'],
    ["src/newarea/x.ts", 'import { strings } from "../strings/index.ts";'],
    ["src/asks/x.ts", 'import { AskStore } from "../store/asks.ts";'],
  ])("refuses the upward or unlisted import in %s: %s", (file, source) => {
    expect(edgesOf(file, source).map(violation).filter(Boolean)).not.toEqual([]);
  });

  it.each([
    ["src/feishu/x.ts", 'import type { FeishuSettings } from "../config.ts";'],
    ["src/feishu/x.ts", 'import { type A, type B } from "../config.ts";'],
    [
      "src/cards/x.ts",
      'import { strings } from "../strings/index.ts";\nimport type { RunView } from "../domain/types.ts";',
    ],
    ["src/main.ts", 'import { startFeishu } from "./feishu/index.ts";'],
    ["src/ws/x.ts", 'import { readCookie } from "../web/cookie.ts";\nimport { z } from "zod";'],
    ["src/asks/x.ts", 'import type { AskStore } from "../store/asks.ts";'],
  ])("lets a downward, peer or type-only settings import through in %s: %s", (file, source) => {
    expect(edgesOf(file, source).map(violation).filter(Boolean)).toEqual([]);
  });
});

/**
 * Rule 4 (issue 26): no import circle at file level, type-only imports included. A circle makes two files
 * one unit that neither can be read, tested or moved without; what both need goes into a third file.
 */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, source] of sources) {
    const targets = edgesOf(file, source)
      .filter((edge) => edge.spec.startsWith("."))
      .map((edge) => path.posix.normalize(path.posix.join(path.posix.dirname(file), edge.spec)))
      .filter((target) => sources.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Each circle of the graph, one per strongly connected component (Tarjan), as `a → b → a`. */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.includes(node)) components.push(component);
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return components.map((component) => cycleThrough(graph, new Set(component)));
}

/** The shortest path from the component's first file back to itself, inside the component. */
function cycleThrough(graph: ReadonlyMap<string, readonly string[]>, component: ReadonlySet<string>): string {
  const [start = ""] = [...component].sort();
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() ?? start;
    for (const next of graph.get(node) ?? []) {
      if (!component.has(next)) continue;
      if (next === start) {
        const route = [node];
        while (route[0] !== start) route.unshift(cameFrom.get(route[0] ?? start) ?? start);
        const more =
          component.size > route.length ? ` (and ${component.size - route.length} more files)` : "";
        return `${[...route, start].join(" → ")}${more}`;
      }
      if (!cameFrom.has(next) && next !== start) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [...component].join(" ↔ ");
}

describe("no import circles", () => {
  it("no two files of src/ import each other, even through others or as types only", () => {
    const files = filesUnder("src").map((file) => file.split(path.sep).join("/"));
    const sources = new Map(files.map((file) => [file, fs.readFileSync(file, "utf8")] as const));
    expect(importCycles(importGraph(sources))).toEqual([]);
  });

  it.each([
    [
      "two files at run time",
      [
        ["src/cards/a.ts", 'import { b } from "./b.ts";'],
        ["src/cards/b.ts", 'import { a } from "./a.ts";'],
      ],
    ],
    [
      "two files by types only",
      [
        ["src/asks/a.ts", 'import type { B } from "./b.ts";'],
        ["src/asks/b.ts", 'export type { A } from "./a.ts";'],
      ],
    ],
    [
      "three files across areas",
      [
        ["src/config.ts", 'import type { X } from "./harness/x.ts";'],
        ["src/harness/x.ts", 'import { y } from "../util/y.ts";'],
        ["src/util/y.ts", 'const c = await import("../config.ts");'],
      ],
    ],
  ])("finds the circle of %s", (_name, pairs) => {
    const cycles = importCycles(importGraph(new Map(pairs as [string, string][])));
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toMatch(/ → .* → /);
  });

  it("finds none in a chain", () => {
    const chain = new Map([
      ["src/a.ts", 'import { b } from "./b.ts";'],
      ["src/b.ts", 'import type { C } from "./c.ts";'],
      ["src/c.ts", 'import { z } from "zod";'],
    ]);
    expect(importCycles(importGraph(chain))).toEqual([]);
  });
});

/**
 * The run feed (issue 26, domain/run-feed.ts): the readers of runs depend on `RunFeed` alone, so a new kind
 * of run (or runs of another instance) joins the feed instead of every reader. They may not name an owner of
 * runs, not even as a type; comments may.
 */
const RUN_OWNERS = new Set(["SessionRunner", "AgentTasks", "AgentTaskFeed"]);
const RUN_READERS = /^src\/(ws|web|feishu)\//;

/** The owners of runs a source names in its code (identifiers: imports, types, values; not comments). */
function ownersNamed(file: string, source: string): string[] {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const named = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && RUN_OWNERS.has(node.text)) named.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return [...named];
}

/**
 * An import by `agents-api` of the Feishu channel or its store (its cards reach Feishu through the feed's
 * readers; what a card owes after a restart is the channel's to know).
 */
function agentsApiReachesFeishu(edge: Edge): boolean {
  if (!edge.from.startsWith("src/agents-api/") || !edge.spec.startsWith(".")) return false;
  const target = path.posix.join(path.posix.dirname(edge.from), edge.spec);
  return target.startsWith("src/feishu/") || target === "src/store/feishu.ts";
}

describe("the run feed's rules", () => {
  const files = filesUnder("src").map((file) => file.split(path.sep).join("/"));

  it("ws, web and feishu read runs through RunFeed: they name neither SessionRunner nor AgentTasks", () => {
    const readers = files.filter((file) => RUN_READERS.test(file));
    const offenders = readers.flatMap((file) =>
      ownersNamed(file, fs.readFileSync(file, "utf8")).map((owner) => `${file}: ${owner}`),
    );
    expect(readers.length).toBeGreaterThan(30);
    expect(offenders).toEqual([]);
  });

  it("agents-api imports nothing from feishu/", () => {
    const agents = files.filter((file) => file.startsWith("src/agents-api/"));
    const offenders = agents.flatMap((file) =>
      edgesOf(file, fs.readFileSync(file, "utf8"))
        .filter(agentsApiReachesFeishu)
        .map((edge) => `${file}: ${edge.spec}`),
    );
    expect(agents.length).toBeGreaterThan(10);
    expect(offenders).toEqual([]);
  });

  it.each([
    ["src/ws/x.ts", 'import type { SessionRunner } from "../harness/runner.ts";'],
    ["src/web/x.ts", "export function f(tasks: { t: AgentTasks }) { return tasks; }"],
    ["src/feishu/x.ts", 'import { type SessionRuns as R, SessionRunner } from "../domain/ports.ts";'],
    ["src/web/x.ts", "const feed = new AgentTaskFeed(lookup);"],
  ])("refuses a reader naming an owner of runs in %s: %s", (file, source) => {
    expect(ownersNamed(file, source)).not.toEqual([]);
  });

  it("lets a reader mention an owner in a comment, and name the feed", () => {
    const source =
      '// fed by SessionRunner and AgentTasks\nimport type { RunFeed } from "../domain/run-feed.ts";';
    expect(ownersNamed("src/ws/x.ts", source)).toEqual([]);
  });

  it.each([
    ["src/agents-api/x.ts", 'import { CardBook } from "../feishu/progress/card-book.ts";'],
    ["src/agents-api/x.ts", 'export type { FeishuChannel } from "../feishu/channel.ts";'],
    ["src/agents-api/x.ts", 'const m = await import("../feishu/index.ts");'],
    ["src/agents-api/x.ts", 'import { CARD_PATCHABLE_MS } from "../store/feishu.ts";'],
  ])("refuses agents-api reaching the Feishu channel in %s: %s", (file, source) => {
    expect(edgesOf(file, source).filter(agentsApiReachesFeishu)).not.toEqual([]);
  });
});

/**
 * Each table belongs to one area (src/store/tables.ts): a SQL string names only its own file's tables. The
 * migrations (store/migrations.ts) create them all; the emulator keeps a database of its own (its journal).
 */
const SQL = /\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER)\b/i;
const TABLE_AFTER =
  /\b(?:FROM|JOIN|INTO|UPDATE|TABLE(?:\s+IF\s+(?:NOT\s+)?EXISTS)?)\s+([A-Za-z_][A-Za-z0-9_]*)/gi;

/** Kysely's builders that name a table by their first argument (store/sql.ts: the query layer). */
const KYSELY_TABLE_CALLS = new Set([
  "selectFrom",
  "insertInto",
  "updateTable",
  "deleteFrom",
  "replaceInto",
  "mergeInto",
]);

/** The tables named by the SQL strings (string and template literals) and Kysely builder calls of a source. */
function tablesNamed(file: string, source: string): string[] {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const named = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      KYSELY_TABLE_CALLS.has(node.expression.name.text)
    ) {
      const [first] = node.arguments;
      const table =
        first && ts.isStringLiteralLike(first) ? first.text.split(" ")[0]?.toLowerCase() : undefined;
      if (table && table in TABLE_OWNERS) named.add(table);
    }
    const text = ts.isStringLiteralLike(node)
      ? node.text
      : ts.isTemplateExpression(node)
        ? [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join(" ")
        : undefined;
    if (text !== undefined && SQL.test(text))
      for (const match of text.matchAll(TABLE_AFTER)) {
        const table = match[1]?.toLowerCase();
        if (table && table in TABLE_OWNERS) named.add(table);
      }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return [...named];
}

function foreignTables(file: string, source: string): string[] {
  return tablesNamed(file, source).filter((table) => !TABLE_OWNERS[table]?.includes(file));
}

describe("table ownership", () => {
  const files = filesUnder("src")
    .map((file) => file.split(path.sep).join("/"))
    .filter(
      (file) =>
        !["src/store/migrations.ts", "src/store/migrations-later.ts", "src/store/pg-schema.ts"].includes(
          file,
        ) && !file.startsWith("src/local/emulator/"),
    );

  it("every SQL string names only tables its own file owns", () => {
    const offenders = files.flatMap((file) =>
      foreignTables(file, fs.readFileSync(file, "utf8")).map((table) => `${file}: ${table}`),
    );
    expect(offenders).toEqual([]);
  });

  it("every table the migrations create has an owner, and every owner's file exists and names it", () => {
    const created = new Set(
      [...MIGRATIONS, ...PG_MIGRATIONS].flatMap((sql) =>
        [...sql.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_]+)/gi)].map((m) => m[1] ?? ""),
      ),
    );
    // A table rebuilt under another name and renamed back (asks_next → asks) is the same table.
    const renamed = new Set(
      MIGRATIONS.flatMap((sql) =>
        [...sql.matchAll(/ALTER\s+TABLE\s+([a-z_]+)\s+RENAME\s+TO/gi)].map((m) => m[1] ?? ""),
      ),
    );
    const tables = [...created].filter((table) => !renamed.has(table));
    expect(tables.filter((table) => !(table in TABLE_OWNERS))).toEqual([]);
    for (const [table, owners] of Object.entries(TABLE_OWNERS))
      for (const owner of owners) expect(tablesNamed(owner, fs.readFileSync(owner, "utf8"))).toContain(table);
  });

  it.each([
    [
      "src/agents-api/store.ts",
      "db.prepare(`SELECT t.* FROM agent_tasks t JOIN progress_cards c ON c.run_id = t.id`)",
    ],
    ["src/store/feishu.ts", 'db.prepare("SELECT c.* FROM progress_cards c JOIN runs r ON r.id = c.run_id")'],
    ["src/feishu/x.ts", "const q = `UPDATE runs SET status = $" + "{s}`;"],
    ["src/web/x.ts", "db.exec('INSERT INTO asks (request_id) VALUES (1)')"],
    ["src/feishu/x.ts", 'await sql.db.updateTable("asks").set({ status: "answered" }).execute();'],
    ["src/web/x.ts", 'sql.db.selectFrom("runs as r").selectAll().execute()'],
  ])("refuses a SQL string naming another area's table in %s: %s", (file, source) => {
    expect(foreignTables(file, source)).not.toEqual([]);
  });

  it("leaves prose and own tables alone", () => {
    expect(foreignTables("src/feishu/x.ts", 'log.info("the runs from the sessions")')).toEqual([]);
    expect(foreignTables("src/store/repos.ts", 'db.prepare("SELECT * FROM runs WHERE id = ?")')).toEqual([]);
  });
});

/**
 * Rule 5 (issue 26): no source file over 350 lines, the pages' browser TypeScript (src/**\/public) included.
 * A file that long holds more than one idea; it is split along its seams, not squeezed.
 */
const MAX_LINES = 350;
/** The only files allowed over the limit, each with its reason: none (the catalogue is split by area). */
const LONG_FILES: Readonly<Record<string, string>> = {};

function linesOf(source: string): number {
  return source.endsWith("\n") ? source.split("\n").length - 1 : source.split("\n").length;
}

function tooLong(sources: ReadonlyMap<string, string>): string[] {
  return [...sources]
    .filter(([file, source]) => !(file in LONG_FILES) && linesOf(source) > MAX_LINES)
    .map(([file, source]) => `${file}: ${linesOf(source)} lines`);
}

describe("file length", () => {
  const files = filesUnder("src").map((file) => file.split(path.sep).join("/"));

  it(`no source file under src/ is over ${MAX_LINES} lines`, () => {
    expect(files.some((file) => file.includes("/public/"))).toBe(true);
    expect(tooLong(new Map(files.map((file) => [file, fs.readFileSync(file, "utf8")] as const)))).toEqual([]);
  });

  it("every exemption names a file that exists and is still over the limit", () => {
    for (const file of Object.keys(LONG_FILES)) {
      expect(files).toContain(file);
      expect(linesOf(fs.readFileSync(file, "utf8"))).toBeGreaterThan(MAX_LINES);
    }
  });

  it("refuses a long file, a browser one included, and lets one at the limit through", () => {
    const long = "const a = 1;\n".repeat(MAX_LINES + 1);
    const atLimit = "const a = 1;\n".repeat(MAX_LINES);
    expect(tooLong(new Map([["src/web/public/x.ts", long]]))).toEqual([
      `src/web/public/x.ts: ${MAX_LINES + 1} lines`,
    ]);
    expect(tooLong(new Map([["src/cards/x.ts", long]]))).toHaveLength(1);
    expect(tooLong(new Map([["src/cards/x.ts", atLimit]]))).toEqual([]);
    expect(tooLong(new Map([["src/strings/card.ts", long]]))).toHaveLength(1);
  });
});
