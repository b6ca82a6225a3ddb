import { runAcp } from "./acp.ts";
import { runAgents } from "./agents.ts";
import { runAskRows } from "./ask-rows.ts";
import { runCallbacks } from "./callbacks.ts";
import { runCardI18n } from "./card-i18n.ts";
import { runCardKit } from "./cardkit.ts";
import { type Check, verdict } from "./checks.ts";
import { runCluster } from "./cluster.ts";
import { runClusterBudget } from "./cluster-budget.ts";
import { type BenchOptions, benchOptions, formatRunInfo, hasGc, machine, runInfo } from "./common.ts";
import { runDurable } from "./durable.ts";
import { runInstances } from "./instances.ts";
import { runManyCards } from "./many-cards.ts";
import { runOneCard } from "./one-card.ts";
import { runScale } from "./scale.ts";

/**
 * `npm run bench [-- [--quick] [name…]]`: runs every benchmark, or the named ones, prints one table each, then
 * the verdict of their correctness checks (checks.ts). Resolves to the exit code: 0 when every check holds,
 * 1 when one missed, 2 for an unknown argument.
 */

export type Benchmark = (options: BenchOptions) => Promise<Check[]>;

export const BENCHMARKS: Readonly<Record<string, Benchmark>> = {
  "one-card": runOneCard,
  "many-cards": runManyCards,
  callbacks: runCallbacks,
  scale: runScale,
  acp: runAcp,
  agents: runAgents,
  durable: runDurable,
  "card-i18n": runCardI18n,
  cardkit: runCardKit,
  cluster: (options) => runCluster(options),
  "ask-rows": (options) => runAskRows(options),
  "cluster-budget": (options) => runClusterBudget(options),
  instances: (options) => runInstances(options),
};

export async function runSuite(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  benchmarks: Readonly<Record<string, Benchmark>> = BENCHMARKS,
  log: (line: string) => void = (line) => console.log(line),
): Promise<number> {
  const isName = (arg: string) => Object.hasOwn(benchmarks, arg);
  const unknown = args.filter((arg) => arg !== "--quick" && !isName(arg));
  if (unknown.length > 0) {
    log(`unknown argument(s): ${unknown.join(" ")}; names: ${Object.keys(benchmarks).join(", ")}`);
    return 2;
  }
  const options = benchOptions(args, env);
  const named = args.filter(isName);
  const m = machine();
  log(`feishu-progress-bot benchmarks — ${m.date}`);
  log(formatRunInfo(runInfo(options)));
  log(`${m.cpus} CPU (${m.cpuModel}), ${m.memory} RAM, Node ${m.node}${options.quick ? ", --quick" : ""}`);
  if (!hasGc()) log("note: run with node --expose-gc for memory figures after a full collection");
  const checks: Check[] = [];
  for (const name of named.length > 0 ? named : Object.keys(benchmarks)) {
    const started = performance.now();
    checks.push(...(await benchmarks[name]!(options)));
    log(`(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }
  const result = verdict(checks);
  log("");
  for (const line of result.lines) log(line);
  return result.exitCode;
}
