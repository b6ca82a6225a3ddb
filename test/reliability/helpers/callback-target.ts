import fc from "fast-check";
import { expect } from "vitest";
import type { AskInput, AskQuestion } from "../../../src/asks/schema.ts";
import { mapFormValue } from "../../../src/cards/form-value.ts";
import { DEMO_QUESTIONS } from "../../../src/harness/agents/demo.ts";
import { strings } from "../../../src/strings/index.ts";
import { isRecord, loopingAskAgent, REQ, SES } from "./agents.ts";
import { junk } from "./arbitraries.ts";
import { until } from "./env.ts";
import { formModelArb, formModelFor } from "./form-model.ts";
import { ALICE, BOB, requestIdsOn, type Stack, startStack } from "./stack.ts";

/**
 * Card callbacks as a bad-input target: Alice's question waits on her progress card; each generated callback
 * must get a known toast, and only her full answer, well formed, may complete the question.
 */

/** A full answer's toasts: 已提交, or 已提交 saying which questions' 其他 text replaced a picked choice. */
const SUBMITTED = [
  strings.feishu.submitted,
  ...["1", "2", ["1", "2"].join(strings.feishu.numberSeparator)].map(strings.feishu.submittedOtherWins),
];

/** Every toast text the callback may answer with. */
export const KNOWN_TOASTS = new Set<string>([
  strings.needAnswer,
  ...Object.values(strings.feishu).filter((value): value is string => typeof value === "string"),
  // A submit that leaves a question unanswered names it (the fuzz target asks these two).
  ...[DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features].map((q, j) => strings.unanswered(j + 1, q.header)),
  ...SUBMITTED,
  // Bob's click on Alice's question, when the tenant's directory names her.
  strings.feishu.onlyAnswerer("Alice"),
]);

export interface CallbackCase {
  header: Record<string, unknown>;
  event: unknown;
  /** Also send it over HTTP as a signed webhook (the in-process call always happens). */
  viaHttp: boolean;
}

/** A live stack with Alice's question waiting on her progress card, and the generator of callbacks at it. */
export async function startCallbackFuzzTarget(): Promise<{
  stack: Stack;
  caseArb: fc.Arbitrary<CallbackCase>;
  send(testCase: CallbackCase): Promise<{ completed: boolean; toast: string }>;
  stop(): Promise<void>;
}> {
  const input: AskInput = { questions: [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features] };
  const questions: AskQuestion[] = input.questions;
  const agent = loopingAskAgent(input);
  const stack = await startStack({ agent, askPing: false });
  const { messageId } = await stack.say({ chatType: "p2p", senderOpenId: ALICE, text: "go" });
  const cardId = await stack.progressCard(messageId);
  const sessionId = stack.privateSessionId(ALICE);
  const nextAsk = (previous: string | undefined) =>
    until(
      () => stack.core.registry.getPendingForSession(sessionId).find((ask) => ask.requestId !== previous),
      "the next question",
      5000,
      1,
    );
  let current = await nextAsk(undefined);
  const runId = current.runId;

  // The form as the card would submit it (its fields and its button's name), or anything at all.
  const form = fc.oneof(
    {
      weight: 4,
      arbitrary: formModelFor(questions).map((model) => ({
        formValue: model.formValue as unknown,
        name: model.name as unknown,
      })),
    },
    {
      weight: 1,
      arbitrary: fc.record({ formValue: junk, name: fc.constantFrom<unknown>("ask0_submit", undefined) }),
    },
    {
      weight: 1,
      arbitrary: formModelArb.map((model) => ({
        formValue: model.formValue as unknown,
        name: model.name as unknown,
      })),
    },
  );
  const value = fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record({
          sessionId: fc.oneof(
            { weight: 5, arbitrary: fc.constant(SES) },
            { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
          ),
          requestId: fc.oneof(
            { weight: 5, arbitrary: fc.constant(REQ) },
            { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
          ),
          // The button's own claim: never trusted, but must still be a short string.
          sender: fc.oneof(
            { weight: 4, arbitrary: fc.constant(ALICE) },
            { weight: 1, arbitrary: fc.constant(BOB) },
            { weight: 1, arbitrary: fc.string({ maxLength: 320 }) },
            { weight: 1, arbitrary: junk },
          ),
          extra: fc.oneof(
            { weight: 6, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: fc.tuple(fc.constantFrom("x", "__proto__", "operator"), junk) },
          ),
          kind: fc.oneof(
            { weight: 8, arbitrary: fc.constant<unknown>("feishu_ask") },
            { weight: 1, arbitrary: junk },
          ),
          act: fc.oneof(
            { weight: 8, arbitrary: fc.constant<unknown>("submit") },
            { weight: 1, arbitrary: junk },
          ),
        })
        .map(({ extra, ...fields }) =>
          Object.fromEntries([...Object.entries(fields), ...(extra ? [extra] : [])]),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constantFrom("progress", "queue"),
        act: fc.constantFrom("cancel", "retry", "promote", "unqueue", "other"),
        sessionId: fc.constantFrom(SES, "s-other"),
        runId: fc.string({ maxLength: 10 }),
        queueId: fc.string({ maxLength: 10 }),
        sender: fc.constantFrom(ALICE, BOB),
      }),
    },
    { weight: 1, arbitrary: junk },
  );
  const operator = fc.oneof(
    { weight: 6, arbitrary: fc.constant<unknown>({ open_id: ALICE }) },
    { weight: 2, arbitrary: fc.constant<unknown>({ open_id: BOB }) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>({ open_id: "" }, {}, { open_id: 1 }, null) },
    { weight: 1, arbitrary: junk },
  );
  const name = (submitted: unknown) =>
    fc.oneof(
      { weight: 6, arbitrary: fc.constant<unknown>(submitted) },
      {
        weight: 1,
        arbitrary: fc.constantFrom<unknown>("ask1_submit", "ask0_submit_x", "submit", "", undefined),
      },
      { weight: 1, arbitrary: junk },
    );
  const action = fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .tuple(form, value, fc.constantFrom("button", "select_static"))
        .chain(([{ formValue, name: submitted }, v, tag]) =>
          name(submitted).map((n) => ({
            value: v,
            form_value: formValue,
            ...(n === undefined ? {} : { name: n }),
            tag,
          })),
        ),
    },
    { weight: 1, arbitrary: junk },
  );
  const context = fc.oneof(
    { weight: 6, arbitrary: fc.constant<unknown>({ open_message_id: cardId, open_chat_id: "oc_x" }) },
    { weight: 1, arbitrary: fc.record({ open_message_id: fc.oneof(fc.string({ maxLength: 10 }), junk) }) },
    { weight: 1, arbitrary: junk },
  );
  const caseArb: fc.Arbitrary<CallbackCase> = fc.record({
    header: fc.constant({ event_type: "card.action.trigger", token: "" }),
    event: fc.oneof(
      {
        weight: 10,
        arbitrary: fc.record(
          { operator, action, context, token: fc.string({ maxLength: 12 }) },
          { requiredKeys: ["operator", "action"] },
        ),
      },
      { weight: 1, arbitrary: junk },
    ),
    // About one case in ten over real HTTP, drawn by fast-check so its seed replays it too.
    viaHttp: fc.nat(9).map((n) => n === 0),
  });

  /** Replaces the placeholders with the live session and question, as a forger who read the card would. */
  const live = (event: unknown): unknown =>
    JSON.parse(
      (JSON.stringify(event) ?? "null")
        .split(JSON.stringify(REQ))
        .join(JSON.stringify(current.requestId))
        .split(JSON.stringify(SES))
        .join(JSON.stringify(sessionId)),
    );

  /** The one way to complete: a well-formed submit for this question, by its sender, with every question answered. */
  const shouldComplete = (event: unknown): boolean => {
    if (!isRecord(event) || !isRecord(event.action) || !isRecord(event.operator)) return false;
    // The envelope must parse (events.ts, from the platform's documented shape): strings where strings go.
    const optionalText = (x: unknown) => x === undefined || typeof x === "string";
    if (!optionalText(event.action.name) || !optionalText(event.action.tag) || !optionalText(event.token))
      return false;
    if (event.context !== undefined) {
      if (!isRecord(event.context)) return false;
      if (!optionalText(event.context.open_message_id) || !optionalText(event.context.open_chat_id))
        return false;
    }
    const v = event.action.value;
    if (!isRecord(v)) return false;
    const keys = Object.keys(v).sort().join(",");
    if (keys !== "act,kind,requestId,sender,sessionId") return false;
    if (
      v.kind !== "feishu_ask" ||
      v.act !== "submit" ||
      v.sessionId !== sessionId ||
      v.requestId !== current.requestId
    )
      return false;
    if (typeof v.sender !== "string" || v.sender.length < 1 || v.sender.length > 300) return false;
    if (event.operator.open_id !== ALICE) return false;
    const formName =
      typeof event.action.name === "string" ? event.action.name.match(/^(ask\d+)_submit$/)?.[1] : undefined;
    return mapFormValue(questions, event.action.form_value, formName).ok;
  };

  return {
    stack,
    caseArb,
    async send(testCase) {
      // JSON round trip: what arrives over either transport is JSON (no undefined, no NaN, no prototypes).
      const event = live(testCase.event);
      const data = isRecord(event) ? { ...testCase.header, ...event } : { ...testCase.header };
      const expectComplete = shouldComplete(event);
      const asked = current.requestId;
      const context = `callback ${JSON.stringify(event).slice(0, 600)}`;
      let toast: { type: string; content: string } | undefined;
      let card: unknown;
      if (testCase.viaHttp && isRecord(event)) {
        const result = await stack.deliver({ schema: "2.0", header: testCase.header, event });
        expect(result.status, context).toBe(200);
        ({ toast, card } = result.body as { toast?: typeof toast; card?: unknown });
      } else {
        const result = await stack.handlers.onCardAction(data);
        result.afterResponse?.(true);
        ({ toast, card } = result.response as { toast?: typeof toast; card?: unknown });
      }
      expect(toast, context).toBeDefined();
      expect(KNOWN_TOASTS.has(toast?.content ?? ""), `${context}: toast ${JSON.stringify(toast)}`).toBe(true);
      const completed = stack.core.registry.get(asked) === undefined;
      expect(completed, `${context}: completed=${completed}`).toBe(expectComplete);
      if (completed) {
        // The raw answer also carries `i18n`, the toast in every language (issue 19).
        expect(toast?.type, context).toBe("success");
        expect(SUBMITTED, context).toContain(toast?.content);
        const answeredCard = (card as { data?: Parameters<typeof requestIdsOn>[0] } | undefined)?.data;
        if (answeredCard) expect(requestIdsOn(answeredCard)).not.toContain(asked);
        current = await nextAsk(asked);
        expect(current.runId).toBe(runId);
      } else {
        expect(toast?.type, context).not.toBe("success");
      }
      return { completed, toast: toast?.content ?? "" };
    },
    async stop() {
      await stack.stop();
    },
  };
}
