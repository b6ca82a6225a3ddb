import { afterEach, describe, expect, it } from "vitest";
import { buildProgressCard } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { buildQueuedCard } from "../src/cards/queued.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { AUDIT_MESSAGE, startEmulator } from "../src/local/emulator/index.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { cardText, type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * The tenant's data-loss-prevention audit (230028 on send, reply and PATCH, docs/feishu-platform.md §3.3)
 * refuses content with a plain e-mail address or phone number, and agent output is full of them (git
 * authors, configs). A refused card must not freeze at 执行中: the bot re-renders it with addresses and
 * numbers masked, and if the audit still refuses it, without the model's text and with a link to the session
 * page. Run on the emulator with the audit on, through the SDK: the final state lands.
 */

const ALICE = "ou_alice000000000000000000000000000";
const ADDRESS = "alice.wang@example.com";
const PHONE = "13812345678";

/** Streams a text with an address and a number, then answers with them (and `extra`) a moment later. */
function contactsAgent(extra = ""): Agent {
  return {
    name: "contacts",
    async run(ctx) {
      ctx.reportText(`正在查 git log：作者 ${ADDRESS}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { text: `**完成**：提交者 Alice <${ADDRESS}>，电话 ${PHONE}。${extra}` };
    },
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function auditedRig(agent: Agent, keywords?: string[]): Promise<FeishuRig> {
  const emulator = await startEmulator({ dlpAudit: keywords ? { keywords } : true });
  closers.unshift(() => emulator.close());
  const r = await startFeishuRig({ emulator, agent });
  closers.unshift(() => r.stop());
  return r;
}

/** A card's JSON as a reader sees its text: the entities the markdown escaping wrote, decoded. */
const shownText = (card: Parameters<typeof cardText>[0]) =>
  cardText(card).replace(/&#(\d+);/g, (_m, code: string) => String.fromCodePoint(Number(code)));

const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

/** Every Open API call the emulator refused with 230028, by method. */
function audited(r: FeishuRig): string[] {
  return r.emulator.calls.filter((call) => call.code === 230028).map((call) => call.method);
}

describe("the tenant's data-loss-prevention audit (230028)", () => {
  it("a model answer with an e-mail address and a phone number lands, masked; so does the first card", async () => {
    const r = await auditedRig(contactsAgent());
    // The user's own message carries a number too: the first card (the reply) is refused as well.
    const userMessageId = await r.send({
      chatType: "p2p",
      senderOpenId: ALICE,
      text: `查一下 ${PHONE} 是谁提交的`,
    });
    const cardId = await r.progressCard(userMessageId);
    const final = await r.until(() => {
      const card = r.cardOf(cardId);
      return isCompleted(card) && card;
    }, "the completed card");
    const text = shownText(final);
    expect(text).toContain("a•••@•••.com");
    expect(text).toContain("138••••5678");
    expect(text).not.toContain(ADDRESS);
    expect(text).not.toContain(PHONE);
    expect(text).toContain("邮箱地址和电话号码已隐藏");
    // The reply was refused once and sent again masked; later PATCHes go out masked from the start.
    expect(audited(r)).toContain("POST");
    const history = r.emulator.messages.cardHistory(cardId);
    expect(history.every((revision) => !JSON.stringify(revision).includes(ADDRESS))).toBe(true);
  });

  it("when masking is not enough, the final state lands without the model's text, pointing to the session page", async () => {
    // The tenant's own rule refuses a word the masking leaves alone.
    const r = await auditedRig(contactsAgent("项目代号：青龙"), ["青龙"]);
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "查一下提交者" });
    const cardId = await r.progressCard(userMessageId);
    const final = await r.until(() => {
      const card = r.cardOf(cardId);
      return isCompleted(card) && card;
    }, "the completed card");
    const text = cardText(final);
    expect(text).not.toContain("青龙");
    expect(text).not.toContain("提交者 Alice");
    expect(text).toContain("未通过企业的数据防泄漏审核");
    expect(text).toMatch(/\[会话详情\]\(http:\/\/localhost:3000\/sessions\/[^)]+\/runs\/[^)]+\)/);
    // The masked final state was refused in its turn (the streamed text may have been refused before).
    expect(audited(r)).toContain("PATCH");
  });

  it("a queued message with an e-mail address gets its card, masked, and the card's later state lands", async () => {
    const emulator = await startEmulator({ dlpAudit: true });
    closers.unshift(() => emulator.close());
    const r = await startFeishuRig({ emulator, stepMs: 150 });
    closers.unshift(() => r.stop());
    const say = (text: string) => r.send({ chatType: "p2p", senderOpenId: ALICE, text });
    const first = await r.progressCard(await say("/long"));
    const second = await say(`/quick 通知 ${ADDRESS}`);
    const queuedCard = await r.progressCard(second);
    /** Refused calls on the queued card (uuid q-…; the run's own card later replies to the same message). */
    const refusedOnQueued = () =>
      r.emulator.calls
        .filter((call) => call.code === 230028)
        .filter(
          (call) =>
            call.path.includes(queuedCard) ||
            (call.path.includes(second) && JSON.stringify(call.requestBody).includes('"uuid":"q-')),
        )
        .map((call) => call.method);
    const queued = shownText(r.cardOf(queuedCard));
    expect(queued).toContain("排在第 1 位");
    expect(queued).toContain("a•••@•••.com");
    expect(queued).not.toContain(ADDRESS);
    expect(refusedOnQueued()).toEqual(["POST"]); // the reply, refused once and sent again masked
    await r.until(() => isCompleted(r.cardOf(first)), "the first task done");
    // Its 已开始 goes out masked from the start: no PATCH of it is refused.
    await r.until(() => cardText(r.cardOf(queuedCard)).includes("已开始执行"), "the queued card's 已开始");
    expect(refusedOnQueued()).toEqual(["POST"]);
    const history = r.emulator.messages.cardHistory(queuedCard);
    expect(history.every((revision) => !JSON.stringify(revision).includes(ADDRESS))).toBe(true);
  });

  it("a queued card the audit refused even masked quotes nothing of the message, and keeps its place and buttons", () => {
    const view = {
      sessionId: "s1",
      queueId: "q1",
      senderId: ALICE,
      text: `项目代号：青龙 ${ADDRESS}`,
      position: 2,
      state: "queued" as const,
    };
    const withheld = JSON.stringify(buildQueuedCard({ ...view, redaction: "withheld" }));
    expect(withheld).not.toContain("青龙");
    expect(withheld).not.toContain("a•••@");
    expect(withheld).toContain("排在第 2 位");
    expect(withheld).toContain("取消排队");
    const masked = JSON.stringify(buildQueuedCard({ ...view, redaction: "masked" }));
    expect(masked).toContain("青龙");
    expect(masked).not.toContain(ADDRESS);
  });

  it("answers a refused send with the platform's code and message, and only while the audit is on", async () => {
    const emulator = await startEmulator();
    try {
      const send = (content: string) =>
        fetch(`${emulator.url}/open-apis/auth/v3/tenant_access_token/internal`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ app_id: emulator.appId, app_secret: emulator.appSecret }),
        })
          .then((res) => res.json() as Promise<{ tenant_access_token: string }>)
          .then(({ tenant_access_token: token }) =>
            fetch(`${emulator.url}/open-apis/im/v1/messages?receive_id_type=open_id`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
              body: JSON.stringify({ receive_id: ALICE, msg_type: "text", content }),
            }),
          )
          .then(async (res) => ({
            status: res.status,
            body: (await res.json()) as { code: number; msg: string },
          }));
      const content = JSON.stringify({ text: `联系 ${ADDRESS}` });
      expect((await send(content)).body.code).toBe(0);
      emulator.setDlpAudit(true);
      expect(await send(content)).toMatchObject({ status: 400, body: { code: 230028, msg: AUDIT_MESSAGE } });
      // Escaped as a card's text escapes it, the address is still an address to a reader.
      expect((await send(JSON.stringify({ text: "联系 alice&#64;example.com" }))).body.code).toBe(230028);
      expect((await send(JSON.stringify({ text: "联系 a•••@•••.com，138••••5678" }))).body.code).toBe(0);
      emulator.setDlpAudit(false);
      expect((await send(content)).body.code).toBe(0);
    } finally {
      await emulator.close();
    }
  });
});

describe("the fake messenger's tenant audit", () => {
  it("refuses as the emulator does, as a FeishuApiError with 230028 that is neither gone nor rate-limited", async () => {
    const fake = new FakeMessenger({ dlpAudit: true });
    const error = await fake.sendText({ openId: ALICE }, `电话 ${PHONE}`).catch((e: unknown) => e);
    expect(error).toMatchObject({ feishuCode: 230028, httpStatus: 400, auditRefused: true });
    expect(error).toMatchObject({ messageGone: false, rateLimited: false, cardRefused: false });
    await expect(fake.sendText({ openId: ALICE }, "电话 138••••5678")).resolves.toHaveProperty("messageId");
    fake.platform.setDlpAudit(false);
    await expect(fake.sendText({ openId: ALICE }, `电话 ${PHONE}`)).resolves.toHaveProperty("messageId");
  });
});

describe("buildProgressCard after the audit refused it", () => {
  const view: ProgressView = {
    sessionId: "s1",
    runId: "run1",
    senderId: "ou_a",
    title: `联系 ${PHONE}`,
    status: "completed",
    steps: [{ title: `读取 ${ADDRESS} 的配置`, status: "done", summary: `找到 ${ADDRESS}` }],
    text: `提交者 ${ADDRESS}，电话 +86 138 1234 5678`,
    startedAt: 0,
    endedAt: 1000,
    detailsUrl: "http://localhost:3000/sessions/s1/runs/run1",
  };

  it("masks every address and number a person or the model wrote, and keeps the link", () => {
    const text = cardText(buildProgressCard(view, [], { redaction: "masked" }));
    expect(text).not.toMatch(/alice\.wang|13812345678|1234 5678/);
    expect(text).toContain("a•••@•••.com");
    expect(text).toContain("sessions/s1/runs/run1");
  });

  it("withheld, drops the model's text and step summaries and points to the session page", () => {
    const text = cardText(buildProgressCard(view, [], { redaction: "withheld" }));
    expect(text).not.toContain("提交者");
    expect(text).not.toContain("找到");
    expect(text).toContain("[会话详情](http://localhost:3000/sessions/s1/runs/run1)");
  });
});
