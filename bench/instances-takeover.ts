import { strings } from "../src/strings/index.ts";
import { toastContent } from "./callbacks.ts";
import { clock, percentile, seededRandom, sleep } from "./common.ts";
import { type CallCounts, countCalls } from "./instances-calls.ts";
import {
  type Fleet,
  freshDatabase,
  hookOf,
  type Outcome,
  openTasks,
  pidOf,
  settled,
  startFleet,
  submitOf,
  type Task,
} from "./instances-fleet.ts";

/**
 * The instances benchmark's takeover: 3 processes on one Postgres database with INSTANCE_LEASE_MS `leaseMs`,
 * `k` tasks taken in by one of them, each waiting on its question; that one is killed with SIGKILL. Measured
 * from the signal: until each of its runs has a new live holder in `cluster_leases`, and until each card shows
 * its form again, PATCHed by the adopter (after the "recovering" card). Then every question is answered through
 * a survivor, to see the adopted tasks end as the original call's result, once, on their one card.
 */

export interface TakeoverRow {
  leaseMs: number;
  /** The killed instance's tasks (its runs' leases at the kill). */
  tasks: number;
  adopted: number;
  adoptedP50: number;
  adoptedMax: number;
  formsBack: number;
  formP50: number;
  formMax: number;
  /**
   * A replacement started once the tasks are back on their cards, within the dead instance's minute: until it
   * listens (its bot identity kept in the store), and until its first Open API call (the background
   * bot/v3/info, once its share of the budget lets it), which is when a start that had to ask first listened.
   */
  replacementListenMs: number;
  replacementFirstCallMs: number;
  /** Answers a survivor accepted, of `tasks`. */
  accepted: number;
  outcome: Outcome;
  calls: CallCounts;
}

/** Live holders of the named runs' leases. */
async function holders(fleet: Fleet, runIds: readonly string[]): Promise<Map<string, string>> {
  const names = runIds.map((id) => `'run:${id.replaceAll("'", "''")}'`).join(", ");
  const rows = await fleet.rows.all(
    `SELECT name, holder FROM cluster_leases WHERE name IN (${names}) AND expires_at > now()`,
  );
  return new Map(rows.map((r) => [String(r.name).slice(4), String(r.holder)]));
}

export async function measureTakeover(options: {
  serverUrl: string;
  leaseMs: number;
  tasks: number;
  cardPatchIntervalMs: number;
}): Promise<TakeoverRow> {
  const { leaseMs } = options;
  const url = await freshDatabase(options.serverUrl, `bench_takeover_${leaseMs}_${Date.now().toString(36)}`);
  const { cardPatchIntervalMs } = options;
  const fleet = await startFleet({
    count: 3,
    store: { kind: "postgres", url },
    leaseMs,
    cardPatchIntervalMs,
  });
  try {
    const victim = fleet.bots[0];
    if (!victim) throw new Error("no instance to kill");
    const opened = await openTasks(fleet, options.tasks, `t${leaseMs}`, () => victim);
    const before = await holders(
      fleet,
      opened.map((t) => t.runId),
    );
    // The instance that took a message in holds its run; a task another one holds is not the victim's.
    const tasks = opened.filter((t) => pidOf(before.get(t.runId) ?? "") === victim.child.pid);

    const formBack = new Map<string, number>();
    const byCard = new Map(tasks.map((t) => [t.cardId, t]));
    let killedAt = Number.POSITIVE_INFINITY;
    const off = fleet.emulator.on("message_patched", ({ message }) => {
      const task = byCard.get(message.messageId);
      if (!task || clock() < killedAt || formBack.has(task.cardId)) return;
      if (message.content.includes('"tag":"form"') && message.content.includes(task.requestId))
        formBack.set(task.cardId, clock() - killedAt);
    });
    killedAt = clock();
    await victim.kill();

    const adopted = new Map<string, number>();
    const deadline = clock() + leaseMs * 3 + 30_000;
    while ((adopted.size < tasks.length || formBack.size < tasks.length) && clock() < deadline) {
      const now = await holders(
        fleet,
        tasks.map((t) => t.runId),
      );
      const at = clock() - killedAt;
      for (const task of tasks) {
        const holder = now.get(task.runId);
        if (holder && holder !== before.get(task.runId) && !adopted.has(task.runId))
          adopted.set(task.runId, at);
      }
      await sleep(25);
    }
    off();

    // A replacement, once the survivors have taken the tasks over (a replacement started at the very kill, in
    // a fleet this young, would take a share of the budget the survivors need for the forms: docs).
    const replacedAt = Date.now();
    await fleet.add();
    const replacementListenMs = Date.now() - replacedAt;
    const accepted = await answerThroughSurvivors(fleet, tasks, leaseMs);
    const outcome = await settled(fleet, tasks, tasks.length * 300 + 60_000);
    const replacementFirstCallMs = await firstBotInfoAfter(fleet, replacedAt, 120_000);
    const adoptedMs = [...adopted.values()];
    const formMs = [...formBack.values()];
    return {
      leaseMs,
      tasks: tasks.length,
      adopted: adopted.size,
      adoptedP50: percentile(adoptedMs, 50),
      adoptedMax: adoptedMs.length < tasks.length ? Number.POSITIVE_INFINITY : percentile(adoptedMs, 100),
      formsBack: formBack.size,
      formP50: percentile(formMs, 50),
      formMax: formMs.length < tasks.length ? Number.POSITIVE_INFINITY : percentile(formMs, 100),
      replacementListenMs,
      replacementFirstCallMs,
      accepted,
      outcome,
      calls: countCalls(fleet.emulator.calls),
    };
  } catch (error) {
    const tails = fleet.bots.map((bot) => `--- pid ${bot.child.pid}\n${bot.output().slice(-2000)}`);
    throw new Error(`takeover (lease ${leaseMs} ms): ${String(error)}\n${tails.join("\n")}`, {
      cause: error,
    });
  } finally {
    await fleet.close();
  }
}

/** Ms from `since` (wall clock) to the first bot/v3/info call after it (only a starting instance makes one). */
async function firstBotInfoAfter(fleet: Fleet, since: number, waitMs: number): Promise<number> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const call = fleet.emulator.calls.find((c) => c.path === "/open-apis/bot/v3/info" && c.at >= since);
    if (call) return call.at - since;
    if (Date.now() > deadline) return Number.POSITIVE_INFINITY;
    await sleep(100);
  }
}

/** Each task's submit, one at a time, to a random survivor; how many got the success toast. */
async function answerThroughSurvivors(fleet: Fleet, tasks: readonly Task[], seed: number): Promise<number> {
  const random = seededRandom(seed);
  let accepted = 0;
  for (const task of tasks) {
    const alive = fleet.alive();
    const bot = alive[Math.floor(random() * alive.length)];
    if (!bot) break;
    const answer = await fleet.emulator.deliverWebhook(hookOf(bot), submitOf(fleet.emulator, task));
    const toast = toastContent(JSON.stringify(answer.body));
    if (answer.status === 200 && toast === strings.feishu.submitted) accepted += 1;
  }
  return accepted;
}
