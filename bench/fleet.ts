import type { Card } from "../src/cards/model.ts";
import { buildProgressCard, type ProgressStepView } from "../src/cards/progress.ts";
import { FeishuApiError, type FeishuMessenger } from "../src/feishu/messenger.ts";
import type { CardPublisher } from "../src/feishu/publisher.ts";
import { DEMO_QUESTIONS } from "../src/harness/agents/demo.ts";
import { type BenchFeishu, clock } from "./common.ts";

/**
 * The cards of the many-cards benchmark: each card's state, its rendering, and a probe on the messenger that
 * sees every PATCH and records what it carried, whether it was stale, and when each change landed.
 */

export type EventKind = "tick" | "form" | "terminal";

export interface CardModel {
  index: number;
  messageId: string;
  status: "running" | "completed" | "failed";
  steps: number;
  form: boolean;
  version: number;
  publisher?: CardPublisher;
  landedKey: string;
  patches: number;
  terminalAt?: number;
  terminalLandedAt?: number;
  formAt?: number;
  formVersion?: number;
  /** When a PATCH showing the form, or a later state that replaced it, landed. */
  formLandedAt?: number;
}

/** What a reader must see promptly, as the channel keys it: the status and the open form. */
export function keyOf(model: CardModel): string {
  return `${model.status}|${model.status === "running" && model.form ? `r${model.index}` : ""}`;
}

interface Rendered {
  model: CardModel;
  version: number;
  key: string;
}
const rendered = new WeakMap<Card, Rendered>();

export function renderCard(model: CardModel): Card {
  const steps: ProgressStepView[] = [];
  for (let k = Math.max(1, model.steps - 7); k <= model.steps; k += 1) {
    steps.push({ title: `process chunk ${k}`, status: k === model.steps ? "running" : "done" });
  }
  const card = buildProgressCard(
    {
      sessionId: `feishu-bench-private-ou_${model.index}`,
      runId: `run-${model.index}`,
      senderId: `ou_${model.index}`,
      title: `Task ${model.index}`,
      status: model.status,
      steps,
      ...(model.status === "completed" ? { text: "**Done.**" } : {}),
      ...(model.status === "failed" ? { error: "Something broke." } : {}),
      startedAt: 0,
      ...(model.status !== "running" ? { endedAt: 60_000 } : {}),
    },
    model.form ? [{ requestId: `r${model.index}`, questions: [DEMO_QUESTIONS.deploy] }] : [],
  );
  rendered.set(card, { model, version: model.version, key: keyOf(model) });
  return card;
}

/**
 * Watches every PATCH through the messenger and keeps the counters the table reports. `plainWhileUrgentWaited`
 * is counted by the app limiter's wrapper in many-cards.ts, which sees the queue: an urgent change that waits
 * for its own card (its PATCH in flight, its 5-per-second gap) is not waiting behind anyone's plain PATCH.
 */
export function instrument(models: CardModel[], feishu: BenchFeishu) {
  const counters = { rateLimited: 0, plainWhileUrgentWaited: 0, staleRenders: 0 };
  const messenger: Pick<FeishuMessenger, "patchCard"> = {
    async patchCard(messageId, card) {
      const meta = rendered.get(card);
      if (!meta) return feishu.messenger.patchCard(messageId, card);
      const { model } = meta;
      model.patches += 1;
      if (meta.version !== model.version) counters.staleRenders += 1;
      try {
        await feishu.messenger.patchCard(messageId, card);
      } catch (error) {
        if (error instanceof FeishuApiError && error.rateLimited) counters.rateLimited += 1;
        throw error;
      }
      model.landedKey = meta.key;
      const now = clock();
      if (meta.key.startsWith("completed") || meta.key.startsWith("failed")) model.terminalLandedAt ??= now;
      if (model.formVersion !== undefined && meta.version >= model.formVersion) model.formLandedAt ??= now;
    },
  };
  return {
    messenger,
    counters,
    reset() {
      for (const model of models) model.patches = 0;
      Object.assign(counters, { rateLimited: 0, plainWhileUrgentWaited: 0, staleRenders: 0 });
    },
    apply(model: CardModel, kind: EventKind) {
      model.version += 1;
      if (kind === "tick") model.steps += 1;
      if (kind === "form") {
        model.form = true;
        model.formAt = clock();
        model.formVersion = model.version;
      }
      if (kind === "terminal") {
        model.status = model.index % 10 === 9 ? "failed" : "completed";
        model.terminalAt = clock();
      }
      model.publisher?.request();
    },
  };
}

export type Probe = ReturnType<typeof instrument>;
