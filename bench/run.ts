import { runAcp } from "./acp.ts";
import { runAgents } from "./agents.ts";
import { runCallbacks } from "./callbacks.ts";
import { runCardI18n } from "./card-i18n.ts";
import { benchOptions, hasGc, machine } from "./common.ts";
import { runDurable } from "./durable.ts";
import { runManyCards } from "./many-cards.ts";
import { runOneCard } from "./one-card.ts";
import { runScale } from "./scale.ts";

/**
 * `npm run bench [-- [--quick] [name…]]`: runs every benchmark, or the named ones, and prints one table each.
 * Names: one-card, many-cards, callbacks, scale, acp, agents, durable, card-i18n. BENCH_SECONDS sets the one-card stream length (default 30).
 */

const BENCHMARKS = {
  "one-card": runOneCard,
  "many-cards": runManyCards,
  callbacks: runCallbacks,
  scale: runScale,
  acp: runAcp,
  agents: runAgents,
  durable: runDurable,
  "card-i18n": runCardI18n,
} as const;
type Name = keyof typeof BENCHMARKS;

const isName = (arg: string): arg is Name => Object.hasOwn(BENCHMARKS, arg);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((arg) => arg !== "--quick" && !isName(arg));
  if (unknown.length > 0) {
    console.error(`unknown argument(s): ${unknown.join(" ")}; names: ${Object.keys(BENCHMARKS).join(", ")}`);
    process.exit(2);
  }
  const options = benchOptions(args, process.env);
  const names = args.filter(isName);
  const m = machine();
  console.log(`feishu-progress-bot benchmarks — ${m.date}`);
  console.log(
    `${m.cpus} CPU (${m.cpuModel}), ${m.memory} RAM, Node ${m.node}${options.quick ? ", --quick" : ""}`,
  );
  if (!hasGc()) console.log("note: run with node --expose-gc for memory figures after a full collection");
  for (const name of names.length > 0 ? names : (Object.keys(BENCHMARKS) as Name[])) {
    const started = performance.now();
    await BENCHMARKS[name](options);
    console.log(`(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
