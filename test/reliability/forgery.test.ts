import { describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/token.ts";
import { encryptBody, signBody } from "../../src/local/emulator/index.ts";
import { auditForSession } from "../../src/store/audit.ts";
import { sqliteSql } from "../../src/store/sql.ts";
import { strings } from "../../src/strings/index.ts";
import type { TestClient } from "../helpers/harness.ts";
import { record, until } from "./helpers/env.ts";
import {
  ALICE,
  AUTH_SECRET,
  BOB,
  ENCRYPT_KEY,
  formsOn,
  GROUP_CHAT,
  requestIdsOn,
  type Stack,
  stacksForEachTest,
  submitValue,
} from "./helpers/stack.ts";

/**
 * Forgery and replay: requests nobody signed, signed with the wrong key, altered on the way or sent too late
 * reach no handler; a replayed event is one event; nobody but a task's sender can answer, cancel or retry it,
 * whatever the card, the button value, the WebSocket token or the session page says.
 */

const VERIFICATION_TOKEN = "reliability-verification-token";
const { stack } = stacksForEachTest({ askPing: false, verificationToken: VERIFICATION_TOKEN });

interface Wire {
  body: string;
  headers: Record<string, string>;
}

/** A request exactly as Feishu would sign it, from which the tests then forge variants. */
function sealed(
  s: Stack,
  payload: unknown,
  options: { key?: string; atMs?: number; nonce?: string } = {},
): Wire {
  const key = options.key ?? ENCRYPT_KEY;
  const timestamp = String(Math.floor((options.atMs ?? s.emulator.clock.now()) / 1000));
  const nonce = options.nonce ?? `nonce-${Math.random().toString(36).slice(2)}`;
  const body = JSON.stringify({ encrypt: encryptBody(key, JSON.stringify(payload)) });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-lark-request-timestamp": timestamp,
      "x-lark-request-nonce": nonce,
      "x-lark-signature": signBody(key, timestamp, nonce, body),
    },
  };
}

async function post(s: Stack, wire: Wire): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(s.hookUrl, { method: "POST", headers: wire.headers, body: wire.body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const countRuns = (s: Stack) => (s.db.prepare("SELECT count(*) AS n FROM runs").get() as { n: number }).n;
const botReplies = (s: Stack, to: string) =>
  s.emulator.messages.listMessages().filter((m) => m.parentId === to);

/** Alice's task in a private chat, with its question on the card. */
async function aliceAsked(s: Stack, text = "帮我部署") {
  const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await s.progressCard(messageId);
  const sessionId = s.privateSessionId(ALICE);
  const ask = await until(() => s.core.registry.getPendingForSession(sessionId)[0], "Alice's question");
  return { messageId, cardId, sessionId, ask };
}

/** A form answer the demo agent's two questions accept. */
const FULL_ANSWER = { ask0_q0: "1", ask0_q1: ["0", "2"] };

describe("forged and replayed webhook requests", () => {
  it("refuses unsigned, wrong-key, tampered, re-timed and stale requests with 401 before any handler runs", async () => {
    const s = await stack();
    const message = () => s.emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "forged" });
    const now = s.emulator.clock.now();
    const cases: { name: string; wire: Wire; reason: RegExp }[] = [];

    const unsigned = sealed(s, message());
    delete unsigned.headers["x-lark-signature"];
    cases.push({ name: "unsigned", wire: unsigned, reason: /Missing X-Lark-Signature/ });

    cases.push({
      name: "signed and encrypted with another key",
      wire: sealed(s, message(), { key: "not-our-key" }),
      reason: /Bad X-Lark-Signature/,
    });

    const wrongSignatureKey = sealed(s, message());
    wrongSignatureKey.headers["x-lark-signature"] = signBody(
      "not-our-key",
      wrongSignatureKey.headers["x-lark-request-timestamp"]!,
      wrongSignatureKey.headers["x-lark-request-nonce"]!,
      wrongSignatureKey.body,
    );
    cases.push({
      name: "encrypted with our key, signed with another",
      wire: wrongSignatureKey,
      reason: /Bad X-Lark-Signature/,
    });

    // The body swapped for another event sealed with our key: the signature no longer matches the bytes.
    const swapped = sealed(s, message());
    swapped.body = sealed(s, message()).body;
    cases.push({ name: "body replaced after signing", wire: swapped, reason: /Bad X-Lark-Signature/ });

    const flipped = sealed(s, message());
    const at = flipped.body.length - 10;
    flipped.body = `${flipped.body.slice(0, at)}${flipped.body[at] === "A" ? "B" : "A"}${flipped.body.slice(at + 1)}`;
    cases.push({ name: "one byte of the ciphertext changed", wire: flipped, reason: /Bad X-Lark-Signature/ });

    const spaced = sealed(s, message());
    spaced.body = `${spaced.body} `;
    cases.push({ name: "whitespace added to the signed JSON", wire: spaced, reason: /Bad X-Lark-Signature/ });

    const retimed = sealed(s, message());
    retimed.headers["x-lark-request-timestamp"] = String(
      Number(retimed.headers["x-lark-request-timestamp"]) + 1,
    );
    cases.push({ name: "timestamp changed after signing", wire: retimed, reason: /Bad X-Lark-Signature/ });

    const renonced = sealed(s, message());
    renonced.headers["x-lark-request-nonce"] = "another-nonce";
    cases.push({ name: "nonce changed after signing", wire: renonced, reason: /Bad X-Lark-Signature/ });

    cases.push({
      name: "signed 6 minutes ago",
      wire: sealed(s, message(), { atMs: now - 6 * 60_000 }),
      reason: /outside the allowed window/,
    });
    cases.push({
      name: "signed 6 minutes in the future",
      wire: sealed(s, message(), { atMs: now + 6 * 60_000 }),
      reason: /outside the allowed window/,
    });

    const wrongToken = message();
    wrongToken.header.token = "someone-elses-token";
    cases.push({
      name: "signed, but carrying another app's verification token",
      wire: sealed(s, wrongToken),
      reason: /Verification token mismatch/,
    });

    const unsignedChallenge = sealed(s, { type: "url_verification", challenge: "c", token: "wrong" });
    delete unsignedChallenge.headers["x-lark-signature"];
    cases.push({
      name: "an unsigned URL check with the wrong token",
      wire: unsignedChallenge,
      reason: /Missing X-Lark-Signature/,
    });

    const results: Record<string, number> = {};
    for (const forged of cases) {
      const result = await post(s, forged.wire);
      results[forged.name] = result.status;
      expect(result.status, forged.name).toBe(401);
      expect(result.body, forged.name).toEqual({
        error: { code: "UNAUTHORIZED", message: expect.stringMatching(forged.reason) },
      });
    }
    await s.channel.idle();
    expect(countRuns(s)).toBe(0);
    expect(s.emulator.messages.listMessages().filter((m) => m.senderType === "app")).toEqual([]);

    // The same message, sealed properly and 4 minutes old (inside the window), is taken.
    const genuine = message();
    expect((await post(s, sealed(s, genuine, { atMs: now - 4 * 60_000 }))).status).toBe(200);
    await s.progressCard(genuine.event.message.message_id);
    expect(countRuns(s)).toBe(1);
    record("forgery: webhook refusals", { cases: cases.length, statuses: results });
  });

  it("takes a replayed message once: the same bytes again, and a redelivery signed anew", async () => {
    const s = await stack();
    const payload = s.emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/quick 一次就好" });
    const wire = sealed(s, payload);
    expect((await post(s, wire)).status).toBe(200);
    // A captured request replayed within the window passes the signature check: de-duplication stops it.
    expect((await post(s, wire)).status).toBe(200);
    expect((await post(s, sealed(s, payload))).status).toBe(200);
    const redelivered = { ...payload, header: { ...payload.header, event_id: "ev_redelivery" } };
    expect((await post(s, sealed(s, redelivered))).status).toBe(200);
    await s.progressCard(payload.event.message.message_id);
    await s.core.runner.idle();
    await s.channel.idle();
    expect(countRuns(s)).toBe(1);
    expect(
      botReplies(s, payload.event.message.message_id).filter((m) => m.msgType === "interactive"),
    ).toHaveLength(1);
    // The same bytes after the window are refused outright.
    s.emulator.clock.advance(6 * 60_000);
    expect((await post(s, wire)).status).toBe(401);
  });

  it("answers a replayed submit with 问题已失效: the question is completed once, by the first", async () => {
    const s = await stack();
    const { cardId, sessionId, ask } = await aliceAsked(s);
    const click = s.emulator.cardAction({
      messageId: cardId,
      operatorOpenId: ALICE,
      name: "ask0_submit",
      value: submitValue(sessionId, ask.requestId, ALICE),
      formValue: FULL_ANSWER,
    });
    const wire = sealed(s, click);
    const first = await post(s, wire);
    const replayed = await post(s, wire);
    expect(first.body.toast).toMatchObject({ type: "success", content: strings.feishu.submitted });
    expect(replayed.body.toast).toMatchObject({ type: "warning", content: strings.feishu.askExpired });
    await s.core.runner.idle();
    const audit = await auditForSession(sqliteSql(s.db), sessionId);
    expect(audit.map((row) => [row.requestId, row.outcome, row.answeredBy])).toEqual([
      [ask.requestId, "answered", ALICE],
    ]);
    expect((await s.core.store.latestRun(sessionId))?.text).toContain("Kubernetes");
  });
});

describe("callbacks from someone who is not the sender", () => {
  it("refuses Bob's submit, cancel and retry of Alice's task in a group, whatever the button value claims", async () => {
    const s = await stack({ stepMs: 20 });
    const { messageId } = await s.say({
      chatType: "group",
      chatId: GROUP_CHAT,
      senderOpenId: ALICE,
      text: "帮我部署",
      mentionBot: true,
    });
    const cardId = await s.progressCard(messageId);
    const sessionId = s.groupSessionId();
    const ask = await until(() => s.core.registry.getPendingForSession(sessionId)[0], "Alice's question");
    const run = s.core.runner.activeRun(sessionId)!;
    const onlySender = { type: "error", content: strings.feishu.onlySender };

    const attempts = {
      "Bob submits Alice's form as it is": await s.click({
        messageId: cardId,
        operatorOpenId: BOB,
        name: "ask0_submit",
        value: submitValue(sessionId, ask.requestId, ALICE),
        formValue: FULL_ANSWER,
      }),
      "Bob submits with the button's sender set to himself": await s.click({
        messageId: cardId,
        operatorOpenId: BOB,
        name: "ask0_submit",
        value: submitValue(sessionId, ask.requestId, BOB),
        formValue: FULL_ANSWER,
      }),
      "Bob cancels Alice's task": await s.click({
        messageId: cardId,
        operatorOpenId: BOB,
        value: { kind: "progress", act: "cancel", sessionId, runId: run.id, sender: BOB },
      }),
    };
    // A question's refusal says whose question it is (issue 25); the stack's directory has no names.
    const notTheAnswerer = { type: "error", content: strings.feishu.onlyAnswererUnnamed };
    for (const [what, answer] of Object.entries(attempts))
      expect(answer.toast, what).toMatchObject(what.includes("cancels") ? onlySender : notTheAnswerer);
    expect(s.core.registry.get(ask.requestId)).toBeDefined();
    expect(s.core.runner.activeRun(sessionId)?.id).toBe(run.id);

    // Bob's answer aimed at another session: the question does not belong to it.
    const elsewhere = await s.click({
      messageId: cardId,
      operatorOpenId: BOB,
      name: "ask0_submit",
      value: submitValue(s.privateSessionId(BOB), ask.requestId, BOB),
      formValue: FULL_ANSWER,
    });
    expect(elsewhere.toast).toMatchObject({ type: "warning", content: strings.feishu.askExpired });
    expect(s.core.registry.get(ask.requestId)).toBeDefined();

    // Alice cancels; Bob may not retry what he did not start.
    expect(
      (
        await s.click({
          messageId: cardId,
          operatorOpenId: ALICE,
          value: { kind: "progress", act: "cancel", sessionId, runId: run.id, sender: ALICE },
        })
      ).toast?.content,
    ).toBe(strings.feishu.taskCancelled);
    await s.core.runner.idle();
    const retry = await s.click({
      messageId: cardId,
      operatorOpenId: BOB,
      value: { kind: "progress", act: "retry", sessionId, runId: run.id, sender: ALICE },
    });
    expect(retry.toast).toMatchObject(onlySender);
    await s.channel.idle();
    expect(countRuns(s)).toBe(1);
    expect(
      (await auditForSession(sqliteSql(s.db), sessionId)).map((row) => [row.outcome, row.answeredBy]),
    ).toEqual([["cancelled", null]]);
  });

  it("refuses Bob's 插队 and 取消排队 on Alice's queued message", async () => {
    const s = await stack({ stepMs: 30 });
    const first = await s.say({
      chatType: "group",
      chatId: GROUP_CHAT,
      senderOpenId: ALICE,
      text: "/long",
      mentionBot: true,
    });
    await s.progressCard(first.messageId);
    const second = await s.say({
      chatType: "group",
      chatId: GROUP_CHAT,
      senderOpenId: ALICE,
      text: "/quick 排队",
      mentionBot: true,
    });
    const queuedCard = await s.progressCard(second.messageId);
    const sessionId = s.groupSessionId();
    const [queued] = await s.core.runner.queued(sessionId);
    for (const act of ["promote", "unqueue"]) {
      const answer = await s.click({
        messageId: queuedCard,
        operatorOpenId: BOB,
        value: { kind: "queue", act, sessionId, queueId: queued!.id, sender: BOB },
      });
      expect(answer.toast, act).toMatchObject({ type: "error", content: strings.feishu.onlySender });
    }
    expect((await s.core.runner.queued(sessionId)).map((q) => q.id)).toEqual([queued!.id]);
  });
});

describe("WebSocket tokens", () => {
  it("refuses forged, wrong-key, tampered, truncated and expired tokens with 401", async () => {
    const s = await stack();
    const bob = s.tokenFor(BOB);
    const [version, payload, signature] = bob.split(".");
    const alicePayload = Buffer.from(JSON.stringify({ sub: ALICE, exp: Date.now() + 60_000 })).toString(
      "base64url",
    );
    const forged: Record<string, string> = {
      "random text": "not-a-token",
      "the right shape, random parts": "v1.eyJzdWIiOiJvdV9hbGljZSJ9.c2lnbmF0dXJl",
      "signed with another secret": signToken("another-secret-0123456789", ALICE, Date.now() + 60_000),
      "Bob's signature on Alice's claims": `${version}.${alicePayload}.${signature}`,
      "no signature": `${version}.${alicePayload}.`,
      "another version": `v2.${payload}.${signature}`,
      "expired a second ago": signToken(AUTH_SECRET, ALICE, Date.now() - 1000),
      empty: "",
    };
    for (const [what, token] of Object.entries(forged)) {
      expect(await s.upgrade({ token }), what).toBe(401);
    }
    // The sign-in cookie counts only from our own pages; Bob's own token still works.
    expect(
      await s.upgrade({ cookie: `fpb_session=${s.tokenFor(ALICE)}`, origin: "https://evil.example" }),
    ).toBe(403);
    expect(typeof (await s.upgrade({ token: bob }))).toBe("object");
  });

  it("gives Bob's valid token no way to see, answer or cancel Alice's question", async () => {
    const s = await stack();
    const bob = await s.connect(BOB);
    const { sessionId, ask } = await aliceAsked(s);
    bob.send({ type: "subscribe", sessionId });
    expect((await bob.next("error")).data).toMatchObject({ code: "forbidden" });
    bob.send({
      type: "ask_user_questions_result",
      sessionId,
      data: {
        requestId: ask.requestId,
        answers: ask.questions.map((q) => ({
          question: q.question,
          selectedLabels: [q.options[0]!.label],
          customInput: null,
        })),
      },
    });
    expect((await bob.next("error")).data).toMatchObject({ code: "forbidden", requestId: ask.requestId });
    bob.send({ type: "cancel", sessionId });
    expect((await bob.next("error")).data).toMatchObject({ code: "forbidden" });
    await bob.sync();
    expect(bob.received.filter((f) => f.type === "ask_user_questions")).toEqual([]);
    expect(s.core.registry.get(ask.requestId)).toBeDefined();
    expect(s.core.runner.activeRun(sessionId)?.status).toBe("running");
  });
});

describe("the session page opened by someone who is not the sender", () => {
  async function signIn(s: Stack, userId: string): Promise<string> {
    const response = await fetch(`${s.httpUrl}/auth/link?token=${s.tokenFor(userId)}&next=/`, {
      redirect: "manual",
    });
    expect(response.status).toBe(303);
    const cookie = response.headers.get("set-cookie")?.split(";")[0];
    if (!cookie) throw new Error("no cookie");
    return cookie;
  }

  it("shows Alice's private task to nobody else: the page API and the socket refuse Bob", async () => {
    const s = await stack();
    const { sessionId, ask } = await aliceAsked(s);
    const page = await fetch(`${s.httpUrl}/sessions/${encodeURIComponent(sessionId)}`);
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain(ask.questions[0]!.question);
    expect((await fetch(`${s.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}`)).status).toBe(401);

    const cookie = await signIn(s, BOB);
    const api = await fetch(`${s.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}`, {
      headers: { cookie },
    });
    expect(api.status).toBe(403);
    const socket = await s.upgrade({ cookie, origin: s.httpUrl });
    if (typeof socket === "number") throw new Error(`refused ${socket}`);
    socket.send({ type: "subscribe", sessionId });
    expect((await socket.next("error")).data.code).toBe("forbidden");
    socket.send({
      type: "ask_user_questions_result",
      sessionId,
      data: { requestId: ask.requestId, answers: [] },
    });
    expect((await socket.next("error")).data.code).toBe("forbidden");
    expect(s.core.registry.get(ask.requestId)).toBeDefined();
  });

  it("lets a group member view Alice's question read-only but not answer it; Alice's answer wins", async () => {
    const s = await stack({ stepMs: 20 });
    const { messageId } = await s.say({
      chatType: "group",
      chatId: GROUP_CHAT,
      senderOpenId: ALICE,
      text: "帮我部署",
      mentionBot: true,
    });
    const cardId = await s.progressCard(messageId);
    const sessionId = s.groupSessionId();
    const ask = await until(() => s.core.registry.getPendingForSession(sessionId)[0], "Alice's question");
    // Bob queues a message in the same group: he may now view the session (the page's rule).
    await s.say({
      chatType: "group",
      chatId: GROUP_CHAT,
      senderOpenId: BOB,
      text: "/quick 我也有事",
      mentionBot: true,
    });
    await until(async () => (await s.core.runner.queued(sessionId)).length === 1, "Bob's queued message");

    const cookie = await signIn(s, BOB);
    const api = await fetch(`${s.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}`, {
      headers: { cookie },
    });
    expect(api.status).toBe(200);
    const viewer = (await s.upgrade({ cookie, origin: s.httpUrl })) as TestClient;
    viewer.send({ type: "subscribe", sessionId });
    // The session may be cancelled (by its sender): what this viewer may do is canAnswer.
    expect((await viewer.next("subscribed")).data).toEqual({ canAnswer: false, canCancel: true });
    expect((await viewer.next("ask_user_questions")).data.requestId).toBe(ask.requestId);
    const answers = ask.questions.map((q) => ({
      question: q.question,
      selectedLabels: [q.options[0]!.label],
      customInput: null,
    }));
    viewer.send({
      type: "ask_user_questions_result",
      sessionId,
      data: { requestId: ask.requestId, answers },
    });
    expect((await viewer.next("error")).data).toMatchObject({ code: "forbidden", requestId: ask.requestId });
    expect(s.core.registry.get(ask.requestId)).toBeDefined();

    const alice = await s.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      name: "ask0_submit",
      value: submitValue(sessionId, ask.requestId, ALICE),
      formValue: FULL_ANSWER,
    });
    expect(alice.toast?.content).toBe(strings.feishu.submitted);
    expect(formsOn(alice.card!.data)).toEqual([]);
    expect((await viewer.next("ask_user_questions_cancelled")).data).toEqual({
      requestId: ask.requestId,
      reason: "answered via feishu",
    });
    expect(requestIdsOn(alice.card!.data)).toEqual([]);
    expect((await auditForSession(sqliteSql(s.db), sessionId))[0]).toMatchObject({
      outcome: "answered",
      answeredBy: ALICE,
      answeredVia: "feishu",
    });
  });
});
