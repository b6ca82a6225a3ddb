import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { unansweredReason } from "../src/asks/answers.ts";
import type { AskQuestion } from "../src/asks/schema.ts";
import { createEventDispatcher } from "../src/feishu/long-connection.ts";
import { encryptBody, signBody } from "../src/local/emulator/index.ts";
import { type Strings, strings } from "../src/strings/index.ts";
import {
  type FeishuRig,
  formsOn,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "../test/helpers/feishu.ts";
import { type Check, within, zero } from "./checks.ts";
import {
  type BenchOptions,
  clock,
  fmtMs,
  maxOf,
  percentile,
  printTable,
  silentLogger,
  sleep,
} from "./common.ts";
import type { PreparedRequest, TimedResponse } from "./http-burst-worker.ts";
import { startTsWorker } from "./worker.ts";

/**
 * Benchmark 3: card submits (valid, invalid, not the sender) arriving all at once or spread over a second,
 * answered by the real channel through the signed webhook (HTTP from a worker thread), through the long
 * connection's dispatcher (what WSClient calls for each frame), and through the long connection at the wire
 * (pbbp2 frames from the emulator to the SDK's WSClient, timed until the ack is back). Every card holds a
 * pending ask from the demo agent.
 */

export type Kind = "valid" | "invalid" | "not the sender";
/** The question an invalid submit leaves empty (its index from 0): the second, 附加功能. */
const LEFT_EMPTY = 1;

/** What each kind of submit sends for the demo agent's two questions (部署方式, 附加功能). */
export function formValueFor(kind: Kind): Record<string, unknown> {
  return kind === "invalid"
    ? { ask0_q0: "0", ask0_q1: [], ask0_c1: " " }
    : { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0", "2"], ask0_c1: "" };
}

/**
 * The oracle: the toast each kind of submit must get, taken from the product's own owner of each text (the
 * catalogue, and asks/answers.ts for the refusal that names the question), so that it cannot go stale.
 */
export function expectedToast(s: Strings, kind: Kind, questions: readonly AskQuestion[]): string {
  if (kind === "valid") return s.feishu.submitted;
  // The bench's platform has no directory of names: the refusal says whose question it is without one.
  if (kind === "not the sender") return s.feishu.onlyAnswererUnnamed;
  return unansweredReason(s, questions, LEFT_EMPTY);
}

/** The toast's text in a callback's answer (the JSON the bot sent back), or undefined when it has none. */
export function toastContent(answer: string): string | undefined {
  try {
    let value: unknown = JSON.parse(answer);
    if (typeof value === "string") value = JSON.parse(value);
    const toast = (value as { toast?: { content?: unknown } } | null)?.toast;
    return typeof toast?.content === "string" ? toast.content : undefined;
  } catch {
    return undefined;
  }
}
const STRANGER = "ou_stranger0000000000000000000000000";

export interface CallbackRow {
  transport: "webhook" | "long connection" | "long connection (wire)";
  arrival: Arrival;
  submits: number;
  p50: number;
  p99: number;
  max: number;
  /** One request at a time (invalid and not-the-sender submits): the cost of one callback. */
  serialP50: number;
  /** Answers whose toast was not the one the oracle expects for that kind of submit. */
  unexpected: number;
  /** The first unexpected answer's toast and what was expected, for the verdict to quote. */
  firstUnexpected?: { kind: Kind; got: string; expected: string };
}

/** Every answer carried its expected toast; the p99 target (50 ms for a burst) is a timing target. */
export function callbackChecks(rows: readonly CallbackRow[]): Check[] {
  return rows.flatMap((r) => {
    const row = `${r.transport}, ${r.arrival}`;
    const unexpected = zero("callbacks", `unexpected answers (${row})`, r.unexpected);
    if (r.firstUnexpected) {
      const { kind, got, expected } = r.firstUnexpected;
      unexpected.actual += ` (first, ${kind}: got ${JSON.stringify(got)}, expected ${JSON.stringify(expected)})`;
    }
    return [
      unexpected,
      ...(r.arrival === "all at once" ? [within("callbacks", `p99 (${row})`, r.p99, 50)] : []),
    ];
  });
}

type Arrival = "all at once" | "spread over 1 s";
const ARRIVALS: Arrival[] = ["all at once", "spread over 1 s"];

interface Submit {
  kind: Kind;
  payload: ReturnType<FeishuRig["emulator"]["cardAction"]>;
  /** When it arrives, ms after the first. */
  atMs: number;
}

export async function runCallbacks(options: BenchOptions): Promise<Check[]> {
  const count = options.quick ? 50 : 200;
  // One app (emulator, bot, limiter) per measurement, set up side by side, so that no measurement waits for
  // another's Open API quota; the measurements themselves run one after the other.
  const setups = (["webhook", "long connection", "long connection (wire)"] as const).flatMap((transport) =>
    ARRIVALS.map((arrival) => prepare(transport, arrival, count)),
  );
  const prepared = await Promise.all(setups);
  const rows: CallbackRow[] = [];
  for (const setup of prepared) {
    try {
      rows.push(await measure(setup));
    } finally {
      await setup.rig.stop();
      fs.rmSync(setup.rig.dataDir, { recursive: true, force: true });
    }
  }
  printTable(
    `3. Card callbacks: ${count} submits (60% valid, 20% invalid, 20% not the sender), answered by the real channel`,
    ["transport", "arrival", "submits", "p50", "p99", "max", "one at a time p50", "unexpected answers"],
    rows.map((r) => [
      r.transport,
      r.arrival,
      String(r.submits),
      fmtMs(r.p50),
      fmtMs(r.p99),
      fmtMs(r.max),
      fmtMs(r.serialP50),
      String(r.unexpected),
    ]),
    2,
  );
  return callbackChecks(rows);
}

interface Prepared {
  transport: CallbackRow["transport"];
  arrival: Arrival;
  rig: FeishuRig;
  cards: CardWithAsk[];
}

async function prepare(
  transport: CallbackRow["transport"],
  arrival: Arrival,
  count: number,
): Promise<Prepared> {
  const rig = await startFeishuRig({
    transport: transport === "webhook" ? "webhook" : "ws",
    askPing: false,
    askTimeoutMs: 600_000,
    // Feishu's callbacks come from many addresses; this client is one, so it gets a whole cap's worth of slots
    // (the per-address share is measured in RELIABILITY.md, not here).
    serverLimits: { maxConnectionsPerAddress: 4096 },
  });
  return { transport, arrival, rig, cards: await cardsWithForms(rig, count) };
}

async function measure({ transport, arrival, rig, cards }: Prepared): Promise<CallbackRow> {
  const spare = cards[0]!;
  // Serial submits that change nothing (invalid, not the sender) on a card whose ask stays pending.
  const serialSubmits = (n: number) =>
    Array.from({ length: n }, (_, i) => submitFor(rig, spare, i % 2 ? "invalid" : "not the sender", 0));
  const send =
    transport === "webhook"
      ? await webhookSender(rig)
      : transport === "long connection"
        ? dispatcherSender(rig)
        : wireSender(rig);
  try {
    // Every card asks the demo agent's questions; read before the burst settles the asks.
    const questions = rig.core.registry.get(spare.requestId)?.questions ?? [];
    await send.warmUp(cards.length, serialSubmits(40));
    const serial: number[] = [];
    for (const submit of serialSubmits(40)) serial.push(...(await send.burst([submit])).map((r) => r.ms));
    const submits = cards.map((card, i) =>
      submitFor(rig, card, kindOf(i), arrival === "all at once" ? 0 : (i * 1000) / cards.length),
    );
    const answers = await send.burst(submits);
    const ms = answers.map((answer) => answer.ms);
    const misses = answers.flatMap((answer, i) => {
      const kind = submits[i]!.kind;
      const expected = expectedToast(strings, kind, questions);
      const got = toastContent(answer.text);
      return got === expected ? [] : [{ kind, got: got ?? answer.text.slice(0, 200), expected }];
    });
    return {
      transport,
      arrival,
      submits: submits.length,
      p50: percentile(ms, 50),
      p99: percentile(ms, 99),
      max: maxOf(ms),
      serialP50: percentile(serial, 50),
      unexpected: misses.length,
      ...(misses[0] ? { firstUnexpected: misses[0] } : {}),
    };
  } finally {
    await send.close();
  }
}

const kindOf = (i: number): Kind => (i % 5 < 3 ? "valid" : i % 5 === 3 ? "invalid" : "not the sender");

interface CardWithAsk {
  messageId: string;
  senderId: string;
  requestId: string;
}

/** One private chat per user, each with a progress card that shows the demo agent's question form. */
async function cardsWithForms(rig: FeishuRig, count: number): Promise<CardWithAsk[]> {
  const users = Array.from({ length: count }, (_, i) => `ou_bench${String(i).padStart(27, "0")}`);
  const sources = new Map<string, string>();
  // Paced at 12 tasks/s (about 36 Open API calls/s): faster, the app limiter lets a reply run into HTTP 429,
  // and the channel does not retry a reply (see BENCHMARKS.md), so that task would have no card.
  for (const user of users) {
    sources.set(await rig.send({ chatType: "p2p", senderOpenId: user, text: "帮我部署" }), user);
    await sleep(1000 / 12);
  }
  const deadline = clock() + 120_000;
  const ready = new Map<string, CardWithAsk>();
  while (ready.size < count) {
    for (const message of rig.emulator.messages.listMessages()) {
      const senderId = message.parentId === undefined ? undefined : sources.get(message.parentId);
      if (!senderId || message.msgType !== "interactive" || ready.has(message.messageId)) continue;
      const card = rig.cardOf(message.messageId);
      if (formsOn(card).length === 0) continue;
      ready.set(message.messageId, {
        messageId: message.messageId,
        senderId,
        requestId: requestIdsOn(card)[0] ?? "",
      });
    }
    if (clock() > deadline) throw new Error(`only ${ready.size} of ${count} cards showed a form`);
    await sleep(200);
  }
  return [...ready.values()];
}

function submitFor(rig: FeishuRig, card: CardWithAsk, kind: Kind, atMs: number): Submit {
  const ask = rig.core.registry.get(card.requestId);
  const payload = rig.emulator.cardAction({
    messageId: card.messageId,
    operatorOpenId: kind === "not the sender" ? STRANGER : card.senderId,
    name: "ask0_submit",
    value: {
      kind: "feishu_ask",
      act: "submit",
      sessionId: ask?.sessionId ?? "",
      requestId: card.requestId,
      sender: card.senderId,
    },
    formValue: formValueFor(kind),
  });
  return { kind, payload, atMs };
}

interface Sender {
  warmUp(connections: number, submits: Submit[]): Promise<void>;
  /** Delivers each submit at its `atMs`; each answer's time counts from its own arrival. */
  burst(submits: Submit[]): Promise<{ ms: number; text: string }[]>;
  close(): Promise<void>;
}

/** Signed, encrypted POSTs to /feishu/events from a worker thread, as Feishu sends them (§2.5). */
async function webhookSender(rig: FeishuRig): Promise<Sender> {
  const worker = startTsWorker<PreparedRequest[], TimedResponse[]>(
    new URL("./http-burst-worker.ts", import.meta.url),
  );
  const prepare = (payload: unknown): PreparedRequest => {
    const timestamp = String(Math.floor(rig.emulator.clock.now() / 1000));
    const nonce = randomBytes(8).toString("hex");
    const body = JSON.stringify({ encrypt: encryptBody(WEBHOOK_KEY, JSON.stringify(payload)) });
    return {
      url: `${rig.httpUrl}/feishu/events`,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "x-lark-request-timestamp": timestamp,
        "x-lark-request-nonce": nonce,
        "x-lark-signature": signBody(WEBHOOK_KEY, timestamp, nonce, body),
      },
      body,
    };
  };
  return {
    async warmUp(connections, submits) {
      // Opens as many keep-alive connections as the burst will use, then runs the handler path a few times.
      await worker.call(
        Array.from({ length: connections }, () => prepare(rig.emulator.urlVerification("w"))),
      );
      for (const submit of submits) await worker.call([prepare(submit.payload)]);
    },
    async burst(submits) {
      const answers = await worker.call(submits.map((s) => ({ ...prepare(s.payload), atMs: s.atMs })));
      return answers.map((a) => ({ ms: a.ms, text: a.status === 200 ? a.body : `HTTP ${a.status}` }));
    },
    close: () => worker.close(),
  };
}

/** What WSClient does with each callback frame: `dispatcher.invoke`, then the answer goes back as JSON. */
function dispatcherSender(rig: FeishuRig): Sender {
  const dispatcher = createEventDispatcher(
    {
      onMessage: (data) => rig.handlers.onMessage(data),
      onCardAction: (data) => rig.handlers.onCardAction(data),
    },
    silentLogger,
  );
  const burst = (submits: Submit[]) => {
    const startedAt = clock();
    return Promise.all(
      submits.map(
        (submit) =>
          new Promise<{ ms: number; text: string }>((resolve, reject) => {
            const arrive = () => {
              const arrivedAt = startedAt + submit.atMs;
              dispatcher.invoke(submit.payload, { needCheck: false }).then((answer: unknown) => {
                const text = JSON.stringify(answer);
                resolve({ ms: clock() - arrivedAt, text });
              }, reject);
            };
            // Each frame arrives as its own event-loop task, as WebSocket messages do.
            if (submit.atMs > 0) setTimeout(arrive, submit.atMs);
            else setImmediate(arrive);
          }),
      ),
    );
  };
  return {
    async warmUp(_connections, submits) {
      for (const submit of submits) await burst([submit]);
    },
    burst,
    close: async () => undefined,
  };
}

/** Frames from the emulator's long-connection server to the rig's WSClient, timed until the ack is back. */
function wireSender(rig: FeishuRig): Sender {
  const burst = (submits: Submit[]) => {
    const startedAt = clock();
    return Promise.all(
      submits.map(
        (submit) =>
          new Promise<{ ms: number; text: string }>((resolve, reject) => {
            const arrive = () => {
              const sentAt = clock();
              rig.emulator.longConnection.deliver(submit.payload, { timeoutMs: 10_000 }).then((ack) => {
                resolve({
                  ms: clock() - sentAt,
                  text: ack.status === 200 ? JSON.stringify(ack.body) : `ack ${ack.status}`,
                });
              }, reject);
            };
            if (submit.atMs > 0) setTimeout(arrive, Math.max(0, startedAt + submit.atMs - clock()));
            else setImmediate(arrive);
          }),
      ),
    );
  };
  return {
    async warmUp(_connections, submits) {
      for (const submit of submits) await burst([submit]);
    },
    burst,
    close: async () => undefined,
  };
}
