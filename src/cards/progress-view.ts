import type { RunStatus } from "../domain/types.ts";
import type { RunUsage } from "../domain/usage.ts";
import type { AskExtrasView } from "./ask-extras.ts";
import type { ProgressStepView } from "./steps.ts";

/**
 * What a progress card shows of a run (built by feishu/progress/card-book.ts, rendered by progress.ts, masked
 * by redaction.ts).
 */
export interface ProgressView extends AskExtrasView {
  sessionId: string;
  runId: string;
  /** The run's sender: the only person whose submit counts; carried in every button value. */
  senderId: string;
  title: string;
  status: RunStatus;
  steps: readonly ProgressStepView[];
  /** Streamed text while running; the final answer (markdown) when completed. */
  text?: string;
  error?: string;
  /** `error` in every language, when the bot wrote it; each rendering takes its own. */
  errorWords?: Readonly<Record<string, string>>;
  startedAt: number;
  endedAt?: number;
  /** 会话详情 link; never carries a token (a group card is the same for everyone). */
  detailsUrl?: string;
  /**
   * A group card is read by everyone in the chat but answered by its sender alone, so its forms say whose
   * answer they wait for (`等待 @Alice 回答`) instead of 需要你的回答. Absent: a private chat.
   */
  chatType?: "group";
  /**
   * An outside agent's task (agents-api): the header names it (`Claude Code 正在处理…`), and there is no
   * 取消任务/重试: no run of ours stands behind those buttons (延长 and 拒绝回答 are the answerer's, and stay).
   */
  agent?: string;
  /**
   * A text reply quoting this card answers its question (issue 30): the forms say so. Set by the Feishu
   * channel, which takes such replies (feishu/card-replies.ts); absent where nothing would read them.
   */
  replyToAnswer?: true;
  /**
   * What the run's model requests cost (domain/usage.ts): an ended card's footer says `用时 · ↑in ↓out · model`.
   * Absent with CARD_FOOTER=off, or when the agent reported none.
   */
  usage?: RunUsage;
}
