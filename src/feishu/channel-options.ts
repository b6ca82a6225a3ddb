import type { AskRegistry } from "../asks/registry.ts";
import type { RunWriters, SessionRuns } from "../domain/ports.ts";
import type { RunFeed } from "../domain/run-feed.ts";
import type { Logger } from "../logger.ts";
import type { CardEntityStore } from "../store/cardkit.ts";
import type { FeishuStore } from "../store/feishu.ts";
import type { StoreSql } from "../store/sql.ts";
import type { AskTimes } from "./ask-deadline.ts";
import type { CardKitApi } from "./cardkit/api.ts";
import type { CallbackRelay } from "./cluster-options.ts";
import type { Limiter } from "./limits.ts";
import type { FeishuMessenger } from "./messenger.ts";
import type { FeishuMetrics } from "./metrics.ts";

/** What the Feishu channel (channel.ts) is built from: runtime.ts hands these over. */
export interface FeishuChannelOptions {
  messenger: FeishuMessenger;
  /** The bot's sessions and what may be done to its runs (harness/runner.ts behind domain/ports.ts). */
  runner: SessionRuns<StoreSql>;
  /** Every run the cards show, the bot's and outside agents' (core.runs): the cards follow this feed. */
  runs: RunFeed;
  registry: AskRegistry;
  store: FeishuStore;
  appLimiter: Limiter;
  logger: Logger;
  now: () => number;
  /** The app id names sessions: `feishu-{appId}-private-{openId}` (domain/session-id.ts). */
  appId: string;
  /**
   * Whether this is the process's first app (default true): it shows the cards of runs that name no app (runs
   * of earlier versions, outside agents' tasks) and claims rows written before apps were recorded (apps.ts).
   */
  firstApp?: boolean;
  /** The app's allow-list (config.ts AllowList); absent, anyone who can reach the bot may use it. */
  allow?: { users: readonly string[]; chats: readonly string[] };
  dataDir: string;
  /** WORKSPACES_DIR (default `DATA_DIR/workspaces`). */
  workspacesDir?: string;
  /** Base of the 会话详情 link (card-book.ts); without it cards carry none (feishu mode without PUBLIC_URL). */
  publicUrl?: () => string;
  cardPatchIntervalMs: number;
  /** CARD_FOOTER (default on): an ended card's footer with the run's tokens and model (cards/progress.ts). */
  cardFooter?: boolean;
  /** Send a short message that @-mentions the sender when a form appears (a PATCH notifies nobody). */
  askPing: boolean;
  /** The messenger's per-call timeout: a PATCH left without an answer is confirmed this long after (10 s). */
  requestTimeoutMs?: number;
  /** A personal sign-in link for the session pages, sent on /login in a private chat (sign-in.ts). */
  signInLink?: (userId: string) => Promise<{ url: string; expiresAt: number }>;
  /** PATCH outcomes of every progress card, for `/metrics`. */
  metrics?: Pick<FeishuMetrics, "patch">;
  /** Deadlines, reminders and 延长 (issue 16; defaults in ask-deadline.ts). */
  asks?: Partial<AskTimes>;
  /** The pause before a refused card reply is tried again (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** FEISHU_REPLY_IN_THREAD: a task from a plain group message answers in a new thread under it (topics.ts). */
  replyInThread?: boolean;
  /** FEISHU_CARD_TRANSPORT=cardkit: progress cards are CardKit entities (cardkit/transport.ts). */
  cardkit?: { api: CardKitApi; store: CardEntityStore };
  /** With several instances: clicks another instance answered on this instance's cards (cluster-options.ts). */
  callbacks?: CallbackRelay;
  /** Which runs this instance runs (core.ownership): a card whose run went elsewhere is not written here. */
  ownership?: RunWriters;
}
