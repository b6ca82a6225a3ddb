import type { QueuedMessage, RunView, SessionInfo } from "../domain/types.ts";
import type { SessionMembers } from "../store/members.ts";
import type { Store } from "../store/repos.ts";
import type { StoreSql } from "../store/sql.ts";
import type { RunOwnership } from "./run-ownership.ts";

/**
 * A message's way in, as one transaction (runner.ts calls it one message of a session at a time): the
 * channel's claim (its de-duplication row), the session, the sender seen in its chat, and a new run — or, while
 * one is under way, a place in the queue, or nothing when the queue is full. All of it or none.
 */

export interface IntakeDeps {
  store: Store;
  members?: SessionMembers | undefined;
  now: () => number;
  newId: () => string;
  /** The queue's limit for one session. */
  maxQueued: number;
  /** A run is under way in the session here (or the runner is stopping): the message waits. */
  busy: (sessionId: string) => boolean;
  /** Who runs which run: a run of the session elsewhere makes the message wait too; a new run is claimed. */
  ownership: RunOwnership;
}

export type Intake =
  | { kind: "full"; limit: number }
  | { kind: "queued"; session: SessionInfo; queued: QueuedMessage; position: number }
  | { kind: "started"; session: SessionInfo; run: RunView };

export interface IntakeInput {
  senderId: string;
  text: string;
  source?: Record<string, unknown>;
}

/** Undefined when `claim` says the message was seen before (nothing written). */
export function takeIn(
  deps: IntakeDeps,
  given: SessionInfo,
  input: IntakeInput,
  claim: (tx: StoreSql) => Promise<boolean>,
  upsert: boolean,
): Promise<Intake | undefined> {
  return deps.store.transaction(async (store) => {
    if (!(await claim(store.sql))) return undefined;
    if (upsert) await store.upsertSession(given);
    const session = upsert ? ((await store.getSession(given.id)) ?? given) : given;
    await deps.members?.within(store.sql).note(session.id, input.senderId, deps.now());
    if (!deps.busy(session.id) && !(await deps.ownership.sessionBusy(store.sql, session.id))) {
      const run = await insertRun(deps, store, session, input);
      return { kind: "started" as const, session, run };
    }
    // Unbounded, a busy chat's queue grew without end and every message re-sent every queued card.
    if ((await store.queue.count(session.id)) >= deps.maxQueued)
      return { kind: "full", limit: deps.maxQueued };
    const queued: QueuedMessage = {
      id: deps.newId(),
      sessionId: session.id,
      senderId: input.senderId,
      text: input.text,
      ...(input.source ? { source: input.source } : {}),
      createdAt: deps.now(),
    };
    return { kind: "queued" as const, session, queued, position: await store.queue.enqueue(queued) };
  });
}

/** The session's next queued message as a new run, in one transaction; undefined when nothing is queued. */
export function takeNext(
  deps: Pick<IntakeDeps, "store" | "now" | "newId" | "ownership">,
  sessionId: string,
): Promise<{ session: SessionInfo; next: QueuedMessage; run: RunView } | undefined> {
  return deps.store.transaction(async (store) => {
    const session = await store.getSession(sessionId);
    // Another instance's run of the session (or one to adopt) drains the queue when it ends.
    if (!session || (await deps.ownership.sessionBusy(store.sql, sessionId))) return undefined;
    const next = await store.queue.dequeue(sessionId);
    if (!next) return undefined;
    const run = await insertRun(deps, store, session, next);
    return { session, next, run };
  });
}

/** Writes a new run and its user message (inside the caller's transaction); starts nothing. */
async function insertRun(
  deps: Pick<IntakeDeps, "now" | "newId" | "ownership">,
  store: Store,
  session: SessionInfo,
  input: IntakeInput,
): Promise<RunView> {
  const run: RunView = {
    id: deps.newId(),
    sessionId: session.id,
    senderId: input.senderId,
    input: input.text,
    status: "running",
    steps: [],
    startedAt: deps.now(),
  };
  await store.insertRun(run, input.source);
  await deps.ownership.claim(store.sql, run.id);
  await store.appendMessage(session.id, { role: "user", content: input.text, runId: run.id });
  return run;
}
