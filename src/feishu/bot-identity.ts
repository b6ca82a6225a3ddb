import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuStore } from "../store/feishu.ts";
import type { Limiter } from "./limits.ts";
import type { FeishuMessenger } from "./messenger.ts";
import type { Background } from "./progress/background.ts";

/**
 * The bot's own identity: its open_id is how a group message @-mentions it (channel.ts). The platform says it
 * (bot/v3/info); the store keeps what it last said, so that a start listens at once. With several instances a
 * replacement started right after a kill may wait up to a minute for its share of the app's budget
 * (cluster-budget.ts): before this, it could take no message until then. Every start still asks, through the
 * limiter, in the background; only a first start, with nothing kept, waits for the answer.
 */

export interface BotIdentity {
  openId: string;
  name: string;
}

export interface BotIdentityDeps {
  store: Pick<FeishuStore, "botIdentity" | "saveBotIdentity">;
  messenger: Pick<FeishuMessenger, "botInfo">;
  appLimiter: Limiter;
  log: Logger;
  now: () => number;
  /** The channel's background work, which shutdown waits for. */
  background: Pick<Background, "track">;
}

/**
 * The identity to start with: the kept one (asked again in the background; `changed` is told if the platform
 * says otherwise), else the platform's answer. Rejects only when nothing is kept and the platform did not say.
 */
export async function botIdentity(
  deps: BotIdentityDeps,
  changed: (identity: BotIdentity) => void,
): Promise<BotIdentity> {
  const kept = await deps.store.botIdentity().catch((error: unknown) => {
    deps.log.warn({ err: describeError(error) }, "kept bot identity not read: asking the platform");
    return undefined;
  });
  const asked = ask(deps, kept === undefined);
  if (!kept) return asked;
  deps.background.track(
    asked.then(
      (fresh) => {
        if (fresh.openId !== kept.openId || fresh.name !== kept.name) changed(fresh);
      },
      (error: unknown) =>
        deps.log.warn({ err: describeError(error) }, "bot identity not confirmed; the kept one stays"),
    ),
  );
  return { openId: kept.openId, name: kept.name };
}

async function ask(deps: BotIdentityDeps, urgent: boolean): Promise<BotIdentity> {
  const bot = await deps.appLimiter(() => deps.messenger.botInfo(), { urgent });
  const identity = { openId: bot.openId, name: bot.name };
  await deps.store.saveBotIdentity({ ...identity, checkedAt: deps.now() }).catch((error: unknown) =>
    // The next start asks again before it listens: nothing is wrong meanwhile.
    deps.log.warn({ err: describeError(error) }, "bot identity not kept"),
  );
  return identity;
}
