import type { Card } from "../../src/cards/model.ts";
import { createAppLimiter } from "../../src/feishu/limits.ts";
import { FeishuApiError } from "../../src/feishu/messenger.ts";
import { CardPublisher } from "../../src/feishu/publisher.ts";
import { createLogger } from "../../src/logger.ts";

/**
 * One progress card, its publisher and a reference platform, for the model-based test (publisher-model.test.ts).
 * The reference is written from DESIGN §5 and docs/feishu-platform.md (§3.2, §3.3) and docs/long-connection.md
 * §Settle, not from the publisher: it knows what the platform shows, and records as a violation every PATCH
 * that breaks a promise, at the moment the PATCH starts:
 * - at most one PATCH of the card on the wire;
 * - no PATCH while a callback for the card is being answered (Feishu reverts it);
 * - nothing after the card stopped (stop(), or Feishu said 230031);
 * - never more than 5 PATCHes of one message in any second (230020);
 * - plain progress (same status and forms as the last PATCH that landed) no sooner than the card's interval
 *   after it, and never while that PATCH put a form on the card (a PATCH wipes half-filled inputs).
 * The last two hold from one quiet landing to the next: a failure, a callback or a stop in between lifts them
 * (a retry, a degraded re-render or a PATCH after the callback is not plain progress); so does the
 * confirmation of the latest state a request timeout after a PATCH that got no answer.
 * A callback's card is shown to its clicker alone (feishu-platform Addendum, later, §1): `screen` is what
 * every other member sees, `clickerSees` what the clicker does; an update that lands while a callback is
 * answered is reverted when the answer arrives (§2.3).
 */

export const INTERVAL_MS = 1000;
/** The request timeout: a PATCH without an answer fails after it, and the publisher confirms after it too. */
export const TIMEOUT_MS = 10_000;

/** What the next PATCH meets on the platform. */
export type Fault =
  | { kind: "slow"; ms: number }
  | { kind: "rate"; code: 230020 | 99991400; httpStatus: 400 | 429; retryAfterMs?: number }
  | { kind: "server"; httpStatus: 500 | 502 }
  /** No answer within the request timeout; the platform applies the card `lateMs` after the call, or never. */
  | { kind: "timeout"; lateMs?: number }
  | { kind: "refused"; code: 230099 | 230025 }
  | { kind: "invalid" }
  | { kind: "gone" };

export interface CardState {
  rev: number;
  status: "running" | "completed" | "failed";
  forms: string[];
}

interface Hold {
  release: (shown?: Card) => void;
  /** The answer's card, as built when the callback changed the state. */
  card: Card;
  /** Another callback or a PATCH overlapped it: the platform may show either card afterwards. */
  overlapped: boolean;
  /** What every member saw as it began: an update that lands before its answer is reverted to this. */
  before: string;
  /** An update landed on the platform since it began. */
  updated: boolean;
}

/** The state a card shows: what the reader sees, whatever the degrade level. */
export const contentOf = (card: Card): string => {
  const first = card.body.elements[0];
  return first?.tag === "markdown" ? first.content : "";
};
const parse = (content: string): CardState => JSON.parse(content);
const keyOf = (state: CardState) => `${state.status}|${state.forms.join(",")}`;
const formOpen = (state: CardState) => state.status === "running" && state.forms.length > 0;

export function createWorld() {
  const state: CardState = { rev: 0, status: "running", forms: [] };
  const violations: string[] = [];
  const faults: Fault[] = [];
  const holds: Hold[] = [];
  const starts: number[] = [];
  /** What every member sees: the reply that created the card, then whatever update was applied last. */
  let screen = JSON.stringify(state);
  /** What the clicker sees instead, since a callback's answer showed them its card (until the next update). */
  let clicker: string | undefined;
  /** An update reaches the platform: everyone sees it, and a callback still being answered will revert it. */
  const applied = (content: string) => {
    screen = content;
    clicker = undefined;
    for (const hold of holds) hold.updated = true;
  };
  let wire = 0;
  let stopped = false;
  /** The last PATCH that landed, and whether anything happened since that lifts the spacing rules. */
  let landed: { at: number; content: string } | undefined;
  let disturbed = true;
  /** A change since the last landing altered the status or the forms. */
  let keyChanged = false;
  /** A PATCH got no answer since the last landing / before it: the publisher may confirm the latest state. */
  let unanswered = false;
  /** From when the publisher may send its confirmation: a request timeout after the landing that followed. */
  let confirmFrom: number | undefined;
  let gone = false;
  /**
   * PATCHes on the wire; `appliedEarlier`: the platform applied it before a callback's answer it overlapped
   * (and reverted it); `spanned`: a callback began while it was out, so the publisher cannot know which.
   */
  const onWire = new Set<{ appliedEarlier: boolean; spanned: boolean }>();
  /** The content of each PATCH and whether it failed: a state that was given up need not land. */
  const lastOutcome = new Map<string, "landed" | "failed">();

  const render = (level: number): Card => {
    const card: Card = {
      schema: "2.0",
      config: { update_multi: true },
      body: { elements: [{ tag: "markdown", content: JSON.stringify(state) }] },
    };
    if (level > 0) card.body.elements.push({ tag: "markdown", content: `degraded ${level}` });
    return card;
  };

  const violate = (what: string) => violations.push(`t=${Date.now()}: ${what}`);

  /** Whether this PATCH may be the confirmation, which the spacing rules do not bind. */
  const checkStart = (content: string): boolean => {
    const now = Date.now();
    const confirmation = confirmFrom !== undefined && now >= confirmFrom;
    if (wire > 0) violate("a second PATCH went out while one was on the wire");
    if (holds.length > 0) violate("a PATCH went out while a callback was being answered");
    if (stopped) violate("a PATCH went out after the card stopped");
    starts.push(now);
    if (starts.filter((at) => at > now - 1000).length > 5) violate("a sixth PATCH within one second");
    if (!landed || disturbed) return confirmation;
    const before = parse(landed.content);
    // Plain progress: only steps changed since that PATCH (a form that came and went meanwhile was urgent).
    const plain = !keyChanged && keyOf(before) === keyOf(parse(content));
    if (plain && !confirmation && now - landed.at < INTERVAL_MS)
      violate(`plain progress ${now - landed.at} ms after the last PATCH (interval ${INTERVAL_MS} ms)`);
    if (plain && !confirmation && formOpen(before) && content !== landed.content)
      violate("a step tick PATCHed over an open form");
    return confirmation;
  };

  const patchCard = async (_messageId: string, card: Card): Promise<void> => {
    const content = contentOf(card);
    const confirmation = checkStart(content);
    const fault = faults.shift() ?? { kind: "slow", ms: 50 };
    wire += 1;
    const call = { appliedEarlier: false, spanned: false };
    onWire.add(call);
    const finish = (error?: FeishuApiError) => {
      wire -= 1;
      onWire.delete(call);
      lastOutcome.set(content, error ? "failed" : "landed");
      if (!error) {
        if (!call.appliedEarlier) applied(content);
        landed = { at: Date.now(), content };
        // Landed across a callback: it may have been reverted, so the next PATCH is a correction.
        disturbed = call.spanned;
        keyChanged = keyOf(state) !== keyOf(parse(content));
        if (confirmation) confirmFrom = undefined;
        if (unanswered) confirmFrom = Date.now() + TIMEOUT_MS;
        unanswered = false;
        return;
      }
      disturbed = true;
      throw error;
    };
    const fail = (init: { feishuCode?: number; httpStatus?: number; retryAfterMs?: number }) =>
      new FeishuApiError({ method: "patch", message: "injected", ...init });
    switch (fault.kind) {
      case "slow":
        await sleep(fault.ms);
        return finish();
      case "rate":
        await sleep(30);
        return finish(
          fail({
            feishuCode: fault.code,
            httpStatus: fault.httpStatus,
            ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
          }),
        );
      case "server":
        await sleep(30);
        return finish(fail({ httpStatus: fault.httpStatus }));
      case "timeout": {
        unanswered = true;
        const { lateMs } = fault;
        // Applied whenever the platform gets to it, even after the bot gave up (and over newer cards).
        if (lateMs !== undefined)
          setTimeout(() => {
            if (!gone) applied(content);
            for (const hold of holds) hold.overlapped = true;
          }, lateMs);
        await sleep(TIMEOUT_MS);
        return finish(new FeishuApiError({ method: "patch", message: "timeout of 10000ms exceeded" }));
      }
      case "refused":
        await sleep(30);
        return finish(fail({ feishuCode: fault.code, httpStatus: 400 }));
      case "invalid":
        await sleep(30);
        return finish(fail({ feishuCode: 230001, httpStatus: 400 }));
      case "gone":
        await sleep(30);
        gone = true;
        stopped = true;
        return finish(fail({ feishuCode: 230031, httpStatus: 400 }));
    }
  };

  const publisher = new CardPublisher({
    messageId: "om_model",
    messenger: { patchCard },
    shape: () => ({ key: keyOf(state), formOpen: formOpen(state) }),
    render,
    intervalMs: INTERVAL_MS,
    appLimiter: createAppLimiter({ now: Date.now }),
    now: Date.now,
    logger: createLogger({ level: "silent" }),
    confirmAfterMs: TIMEOUT_MS,
    shown: JSON.stringify(render(0)),
  });

  return {
    state,
    publisher,
    violations,
    faults,
    holds,
    get screen() {
      return screen;
    },
    /** What the member who clicked last sees. */
    get clickerSees() {
      return clicker ?? screen;
    },
    get stopped() {
      return stopped;
    },
    /** The state changed, as the channel announces it. */
    change(edit: (s: CardState) => void) {
      edit(state);
      state.rev += 1;
      if (landed && keyOf(state) !== keyOf(parse(landed.content))) keyChanged = true;
      publisher.request();
    },
    /** The state changed and nobody said so (the publisher renders after each PATCH to catch this). */
    changeSilently() {
      state.rev += 1;
    },
    onWire: () => wire,
    stop() {
      stopped = true;
      publisher.stop();
    },
    /** A card callback arrives: held, the state changes (an answer), the answer's card is built from it. */
    callbackStarts(changes: boolean) {
      const release = publisher.hold();
      const overlapped = holds.length > 0 || wire > 0;
      for (const call of onWire) call.spanned = true;
      for (const hold of holds) hold.overlapped = true;
      if (changes) {
        state.forms = state.forms.slice(1);
        state.rev += 1;
        publisher.request();
      }
      holds.push({
        release,
        card: render(publisher.degradeLevel),
        overlapped,
        before: screen,
        updated: false,
      });
      disturbed = true;
    },
    /**
     * The oldest callback's answer was sent (or not) and settled. A delivered answer's card is what its
     * clicker sees; an update that landed meanwhile is reverted for everyone. A PATCH still on the wire was
     * applied before the answer (`appliedLast`: reverted too, its late reply changes nothing) or after it.
     */
    callbackEnds(delivered: boolean, appliedLast: boolean) {
      const hold = holds.shift();
      if (!hold) return;
      if (delivered && !gone) {
        if (appliedLast && onWire.size > 0) {
          for (const call of onWire) call.appliedEarlier = true;
          hold.updated = true;
        }
        if (hold.updated) screen = hold.before;
        clicker = contentOf(hold.card);
      }
      hold.release(delivered ? hold.card : undefined);
      disturbed = true;
    },
    /** Whether the current state is allowed not to be on the card once everything has settled. */
    mayLag(): boolean {
      if (stopped) return true;
      if (lastOutcome.get(JSON.stringify(state)) === "failed") return true; // given up: bounded retries
      const shown = parse(screen);
      // Form-safe: a step tick waits while the form it would wipe is open.
      return formOpen(state) && keyOf(shown) === keyOf(state);
    },
  };
}

export type World = ReturnType<typeof createWorld>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
