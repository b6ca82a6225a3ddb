import { afterEach } from "vitest";
import type { Card } from "../../src/cards/model.ts";
import type { AcpAgent } from "../../src/harness/agents/acp/index.ts";
import { cardText, type FeishuRig, startFeishuRig } from "./feishu.ts";

/**
 * The scripted ACP agent behind a card on the emulator (test/fixtures/acp-agent.ts): a rig per test, closed
 * after it, and the reads the ACP tests make of its cards.
 */

export const ALICE = "ou_alice000000000000000000000000000";
export const BOB = "ou_bob00000000000000000000000000000";
export const GROUP = "oc_acp_group";

/** Registers the clean-up with vitest; call at the top of a test file. */
export function acpRigs() {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return {
    closers,
    async rig(agent: AcpAgent, dataDir?: string): Promise<FeishuRig> {
      const r = await startFeishuRig({ agent, tools: [], ...(dataDir ? { dataDir } : {}) });
      closers.push(() => agent.close());
      closers.push(() => r.stop());
      return r;
    },
  };
}

/** Sends a message as Alice (privately, or @-mentioning the bot in the group); the progress card's id. */
export async function ask(r: FeishuRig, text: string, group = false): Promise<string> {
  const id = await r.send({
    chatType: group ? "group" : "p2p",
    senderOpenId: ALICE,
    text,
    ...(group ? { chatId: GROUP, mentionBot: true } : {}),
  });
  return r.progressCard(id);
}

/** The card once its header has `template` (green: completed, red: failed, grey: cancelled). */
export function settled(r: FeishuRig, cardId: string, template = "green"): Promise<Card> {
  return r.until(
    () => {
      const card = r.cardOf(cardId);
      return card.header?.template === template && card;
    },
    `a ${template} card`,
    20_000,
  );
}

/** The step list as a reader in `locale` sees it (the i18n_content of the 步骤 block). */
export function stepsIn(card: Card, locale: "zh_cn" | "en_us"): string {
  for (const element of card.body.elements)
    if (element.tag === "markdown" && element.content.startsWith("**步骤**"))
      return element.i18n_content?.[locale] ?? "";
  return "";
}

/** The 取消任务 button's callback value, as the card carries it. */
export function cancelValue(card: Card): Record<string, string> {
  const match = /\{"kind":"progress","act":"cancel"[^}]*\}/.exec(cardText(card));
  if (!match) throw new Error("no 取消任务 button on the card");
  return JSON.parse(match[0]);
}
