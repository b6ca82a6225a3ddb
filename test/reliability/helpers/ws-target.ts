import fc from "fast-check";
import { expect } from "vitest";
import { WebSocket } from "ws";
import { checkAnswers } from "../../../src/asks/answers.ts";
import type { AskQuestion } from "../../../src/asks/schema.ts";
import { parseClientFrame, type ServerFrame } from "../../../src/ws/protocol.ts";
import { sampleAsk } from "../../fixtures.ts";
import { startRun, startTestServer } from "../../helpers/harness.ts";
import { loopingAskAgent, REQ, SES } from "./agents.ts";
import { answersModelFor } from "./answers-model.ts";
import { junk } from "./arbitraries.ts";
import { until } from "./env.ts";
import { ALICE } from "./stack.ts";

/**
 * The WebSocket hub as a bad-input target: Alice's question waits on a live hub, each generated frame must get
 * a clear refusal (or its proper answer), and only valid answers may complete the question.
 */

export type FuzzFrame =
  | { kind: "text"; text: string }
  | { kind: "binary"; bytes: Uint8Array }
  | { kind: "frame"; value: Record<string, unknown> };

export interface WsFuzzTarget {
  frameArb: fc.Arbitrary<FuzzFrame>;
  /** Sends one frame and checks everything the hub answered; throws on a violation. */
  send(frame: FuzzFrame): Promise<{ errors: number; completed: boolean }>;
  stop(): Promise<void>;
}

/** A bare `ws` client that keeps frames in a list (no per-frame searching: it sees tens of thousands). */
async function rawClient(url: string) {
  const ws = new WebSocket(url);
  const frames: ServerFrame[] = [];
  const waiters = new Map<string, () => void>();
  ws.on("message", (data) => {
    const frame = JSON.parse(String(data)) as ServerFrame;
    frames.push(frame);
    if (frame.type === "pong") waiters.get(frame.sessionId)?.();
  });
  ws.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused ${res.statusCode}`)));
  });
  let syncs = 0;
  return {
    ws,
    frames,
    /** Everything the server sent in answer to frames before this one has arrived once this resolves. */
    async sync(): Promise<string> {
      syncs += 1;
      const marker = `sync-${syncs}`;
      const pong = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no pong for ${marker}`)), 5000);
        waiters.set(marker, () => {
          clearTimeout(timer);
          waiters.delete(marker);
          resolve();
        });
      });
      ws.send(JSON.stringify({ type: "ping", sessionId: marker }));
      await pong;
      return marker;
    },
  };
}

export async function startWsFuzzTarget(): Promise<WsFuzzTarget> {
  const input = sampleAsk();
  const agent = loopingAskAgent(input);
  const server = await startTestServer({ agent });
  const session = await server.createSession(ALICE);
  const client = await rawClient(`${server.url}?token=${server.tokenFor(ALICE)}`);
  await startRun(server.core, session, ALICE);
  const nextAsk = async (previous: string | undefined) =>
    until(
      () => server.core.registry.getPendingForSession(session.id).find((ask) => ask.requestId !== previous),
      "the next question",
      5000,
      1,
    );
  let current = await nextAsk(undefined);
  await client.sync(); // the question's frame is in; each case then sees only what it caused
  const questions: AskQuestion[] = input.questions;

  const answersArb = fc.oneof(
    { weight: 4, arbitrary: answersModelFor(questions).map((model) => model.raw) },
    { weight: 1, arbitrary: junk },
  );
  const structured = fc
    .record(
      {
        type: fc.oneof(
          {
            weight: 6,
            arbitrary: fc.constantFrom(
              "subscribe",
              "unsubscribe",
              "ask_user_questions_result",
              "cancel",
              "ping",
            ),
          },
          { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
          { weight: 1, arbitrary: junk },
        ),
        sessionId: fc.oneof(
          { weight: 6, arbitrary: fc.constant(SES) },
          { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
          { weight: 1, arbitrary: fc.string({ minLength: 301, maxLength: 305 }) },
          { weight: 1, arbitrary: junk },
        ),
        data: fc.oneof(
          { weight: 1, arbitrary: junk },
          {
            weight: 6,
            arbitrary: fc.record(
              {
                requestId: fc.oneof(
                  { weight: 6, arbitrary: fc.constant(REQ) },
                  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
                  { weight: 1, arbitrary: fc.string({ minLength: 201, maxLength: 203 }) },
                  { weight: 1, arbitrary: junk },
                ),
                answers: answersArb,
              },
              { requiredKeys: [] },
            ),
          },
        ),
      },
      { requiredKeys: [] },
    )
    .map((value): FuzzFrame => {
      // A cancel of the real session is a valid command, not bad input: aim it at another session.
      const aimed =
        value.type === "cancel" && value.sessionId === SES ? { ...value, sessionId: "web-elsewhere" } : value;
      return { kind: "frame", value: aimed };
    });
  // Answers aimed at the waiting question: the one kind of frame that can complete it.
  const aimed = fc
    .record({
      sessionId: fc.oneof(
        { weight: 8, arbitrary: fc.constant(SES) },
        { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
      ),
      requestId: fc.oneof(
        { weight: 8, arbitrary: fc.constant(REQ) },
        { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
      ),
      answers: answersArb,
    })
    .map(
      ({ sessionId, requestId, answers }): FuzzFrame => ({
        kind: "frame",
        value: { type: "ask_user_questions_result", sessionId, data: { requestId, answers } },
      }),
    );
  const frameArb: fc.Arbitrary<FuzzFrame> = fc.oneof(
    { weight: 4, arbitrary: aimed },
    { weight: 4, arbitrary: structured },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: "binary", maxLength: 60 })
        .map((text): FuzzFrame => ({ kind: "text", text })),
    },
    { weight: 1, arbitrary: fc.json({ maxDepth: 2 }).map((text): FuzzFrame => ({ kind: "text", text })) },
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 40 }).map((bytes): FuzzFrame => ({ kind: "binary", bytes })),
    },
  );

  const history: string[] = [];
  const textOf = (frame: FuzzFrame): string | undefined => {
    if (frame.kind === "binary") return undefined;
    if (frame.kind === "text") return frame.text;
    const json = JSON.stringify(frame.value) ?? "null";
    return json
      .split(JSON.stringify(REQ))
      .join(JSON.stringify(current.requestId))
      .split(JSON.stringify(SES))
      .join(JSON.stringify(session.id));
  };

  return {
    frameArb,
    async send(frame) {
      const text = textOf(frame);
      history.push(text ?? "<binary>");
      if (history.length > 5) history.shift();
      expect(
        server.core.registry.get(current.requestId),
        `question gone before ${JSON.stringify(history)}`,
      ).toBeDefined();
      const before = client.frames.length;
      if (text === undefined) client.ws.send(frame.kind === "binary" ? frame.bytes : "", { binary: true });
      else client.ws.send(text);
      const marker = await client.sync();
      const end = client.frames.findIndex(
        (f, i) => i >= before && f.type === "pong" && f.sessionId === marker,
      );
      // Snapshots are pushed to subscribers whenever the run changes, and a question arrives when it is asked:
      // neither is an answer to the frame sent.
      const answered = client.frames
        .slice(before, end)
        .filter((f) => f.type !== "session_snapshot" && f.type !== "ask_user_questions");
      const errors = answered.filter((f) => f.type === "error");
      const context = `frame ${text ?? "<binary>"} got ${JSON.stringify(answered).slice(0, 800)}`;
      for (const error of errors) {
        if (error.type !== "error") continue;
        // A clear message, and never the hub's last-resort catch (that would be an exception in a handler).
        expect(error.data.message.length, context).toBeGreaterThan(5);
        expect(error.data.message, context).not.toMatch(/^could not handle frame/);
      }
      expect(client.ws.readyState, context).toBe(WebSocket.OPEN);
      expect(server.core.hub.connectionCount(), context).toBe(1);

      const expectOnlyError = (code: string) => {
        expect(
          answered.map((f) => f.type),
          context,
        ).toEqual(["error"]);
        expect(errors[0]?.type === "error" && errors[0].data.code, context).toBe(code);
      };
      let completed = false;
      const parsed = text === undefined ? undefined : parseClientFrame(text);
      if (parsed === undefined) expectOnlyError("bad_frame");
      else if (!parsed.ok) expectOnlyError(parsed.code);
      else {
        const f = parsed.frame;
        if (f.type === "ping")
          expect(
            answered.map((a) => a.type),
            context,
          ).toEqual(["pong"]);
        if (f.type === "unsubscribe") expect(answered, context).toEqual([]);
        if (f.type === "cancel") expectOnlyError("forbidden");
        if (f.type === "subscribe") {
          if (f.sessionId === session.id)
            expect(
              answered.map((a) => a.type),
              context,
            ).toContain("subscribed");
          else expectOnlyError("forbidden");
        }
        if (f.type === "ask_user_questions_result") {
          const target = f.sessionId === session.id && f.data.requestId === current.requestId;
          const checked = checkAnswers(questions, f.data.answers);
          if (!target) expectOnlyError("stale_request");
          else if (!checked.ok) expectOnlyError("invalid_answers");
          else {
            // The one way to complete: the right question, answered well. The agent gets exactly those answers.
            expect(
              answered.map((a) => a.type),
              context,
            ).toEqual(["ask_user_questions_accepted", "ask_user_questions_cancelled"]);
            await until(() => agent.results.length > 0 && agent.results.at(-1), "the tool result", 5000, 1);
            expect(JSON.parse(agent.results.at(-1) ?? "{}"), context).toEqual({ answers: checked.answers });
            current = await nextAsk(current.requestId);
            await client.sync();
            agent.results.length = 0;
            completed = true;
          }
        }
      }
      if (!completed)
        expect(server.core.registry.get(current.requestId), `${context}: the ask was settled`).toBeDefined();
      return { errors: errors.length, completed };
    },
    async stop() {
      client.ws.terminate();
      await server.stop();
    },
  };
}
