import { MONTHS, plural } from "./en-words.ts";

/**
 * The words of questions and their answers: the tool's summaries, a left-empty answer, the durable asks'
 * deadlines, 延长 and why a question is gone (issue 16).
 * Chinese (zh_cn, the seeds' text) and English (en_us) side by side; `typeof zhAsks` holds the English to
 * the Chinese shape, so a missing or misshapen entry is a type error here.
 */

/** The seed's words for an answer left empty (feishu-card-ask-design §4.3); `unanswered` puts them after the question. */
const NEED_ANSWER = "请至少选择一项或填写其他";

export const zhAsks = {
  askUnavailable: "当前通道无法向用户提问",
  needAnswer: NEED_ANSWER,
  /**
   * A submit that left a question empty, naming it by number (from 1) and header, on every surface (the
   * card's toast, the session page, the WebSocket error): one text, made in asks/answers.ts unansweredReason.
   */
  unanswered: (index: number, header: string) => `第 ${index} 题「${header}」：${NEED_ANSWER}`,
  answeredSummary: (count: number) => `回答了 ${count} 个问题`,
  askTimedOutSummary: "用户未在规定时间内回答",
  askCancelledSummary: "提问已取消",
  askDeclinedSummary: "用户拒绝回答",
  askInvalidSummary: (detail: string) => `提问参数无效：${detail}`,
  toolFailedSummary: (detail: string) => `失败：${detail}`,
  recovering: "任务正在恢复执行",
  storageFailed: (detail: string) =>
    `无法写入数据库（${detail}），任务已停止：检查磁盘空间，以及是否有其他进程占用 DATA_DIR`,
  /** Durable asks (issue 16): deadlines, 延长, a message behind the question, why a question is gone. */
  asks: {
    deadline: (at: string) => `请在 ${at} 前回答`,
    extend: (minutes: number) => `延长 ${minutes} 分钟`,
    extended: (at: string) => `已延长，请在 ${at} 前回答`,
    extendLimit: "已达延长上限",
    queuedBehind: (count: number) => `有 ${count} 条新消息在等这个问题：回答后处理，或取消并处理新消息`,
    replace: "取消并处理新消息",
    replaced: "已取消，正在处理新消息",
    goneLine: (reason: string) => `问题已失效：${reason}`,
    gone: {
      timeout: "已超时",
      cancelled: "已取消",
      web: "已由网页端回答",
      mcp: "已由调用方回答",
    },
    timedOut: "未在期限内收到回答，任务已不等回答继续执行",
    remind: (count: number, at: string) => `有 ${count} 个问题等你回答，将于 ${at} 失效，请在卡片中作答`,
    /** A time in a text message, which every reader sees alike: with its zone (15:42（GMT+8）). */
    timeInZone: (time: string, zone: string) => `${time}（${zone}）`,
    /**
     * The @-ping and the reminder once their question ended, edited in place (a recall would leave
     * 撤回了一条消息): `who` is an @-mention in a group, 你 in a private chat.
     */
    ended: {
      answered: (who: string) => `问题已由 ${who} 回答`,
      answeredOnWeb: (who: string) => `问题已由 ${who} 在网页端回答`,
      answeredByReply: (who: string) => `问题已由 ${who} 回复卡片回答`,
      answeredByCaller: "问题已由调用方回答",
      declined: (who: string) => `${who} 拒绝回答了问题`,
      you: "你",
    },
    /** The card once its question was answered on the session page: a success, with who and when. */
    answeredOnWebBy: (mention: string, at: string) => `✅ ${mention} 已在网页端回答（${at}）`,
    answeredOnWebYou: (at: string) => `✅ 已在网页端回答（${at}）`,
    /** The card once its question was answered by a text reply quoting the card (issue 30). */
    answeredByReplyBy: (mention: string, at: string) => `✅ ${mention} 已回复卡片作答（${at}）`,
    answeredByReplyYou: (at: string) => `✅ 已回复卡片作答（${at}）`,
    answeredByCaller: "✅ 已由调用方回答",
    /** The card once the person declined the question (拒绝回答): their choice, not a failure. */
    declinedNotice: "🚫 已拒绝回答",
    declinedBy: (mention: string) => `🚫 ${mention} 已拒绝回答`,
    /** Between "the question is gone" and what the run did about it (一句。另一句). */
    sentenceBreak: "。",
    /** A deadline's date when it is not today (`12月2日 15:42`); month 1–12. */
    deadlineDate: (month: number, day: number) => `${month}月${day}日`,
  },
};

export const enAsks: typeof zhAsks = {
  askUnavailable: "This channel cannot ask the user questions",
  needAnswer: "Choose at least one option or fill in Other",
  unanswered: (index: number, header: string) =>
    `Question ${index} "${header}": choose at least one option or fill in Other`,
  answeredSummary: (count: number) => `Answered ${count} ${plural(count, "question")}`,
  askTimedOutSummary: "The user did not answer in time",
  askCancelledSummary: "The question was cancelled",
  askDeclinedSummary: "The user declined to answer",
  askInvalidSummary: (detail: string) => `Invalid question: ${detail}`,
  toolFailedSummary: (detail: string) => `Failed: ${detail}`,
  recovering: "Resuming the task",
  storageFailed: (detail: string) =>
    `Could not write to the database (${detail}), so the task was stopped: check the free disk space and whether another process is using DATA_DIR`,
  asks: {
    deadline: (at: string) => `Please answer by ${at}`,
    extend: (minutes: number) => `Extend by ${minutes} min`,
    extended: (at: string) => `Extended: please answer by ${at}`,
    extendLimit: "No further extensions are allowed",
    queuedBehind: (count: number) =>
      `${count} new ${plural(count, "message")} ${count === 1 ? "is" : "are"} waiting on this question: answer it first, or cancel it and handle the new ${plural(count, "message")}`,
    replace: "Cancel and handle new messages",
    replaced: "Cancelled, handling the new messages",
    goneLine: (reason: string) => `The question is no longer open: ${reason}`,
    gone: {
      timeout: "it timed out",
      cancelled: "it was cancelled",
      web: "answered on the web",
      mcp: "answered by the caller",
    },
    timedOut: "No answer arrived before the deadline, so the task went on without one",
    remind: (count: number, at: string) =>
      `${count} ${plural(count, "question")} ${count === 1 ? "is" : "are"} waiting for your answer and will close at ${at}. Please answer on the card`,
    timeInZone: (time: string, zone: string) => `${time} (${zone})`,
    ended: {
      answered: (who: string) => `The question was answered by ${who}`,
      answeredOnWeb: (who: string) => `The question was answered by ${who} on the web page`,
      answeredByReply: (who: string) => `The question was answered by ${who} in a reply to the card`,
      answeredByCaller: "The question was answered by the caller",
      declined: (who: string) => `The question was declined by ${who}`,
      you: "you",
    },
    answeredOnWebBy: (mention: string, at: string) => `✅ Answered on the web page by ${mention} at ${at}`,
    answeredOnWebYou: (at: string) => `✅ Answered on the web page at ${at}`,
    answeredByReplyBy: (mention: string, at: string) =>
      `✅ ${mention} answered in a reply to the card at ${at}`,
    answeredByReplyYou: (at: string) => `✅ Answered in a reply to the card at ${at}`,
    answeredByCaller: "✅ Answered by the caller",
    declinedNotice: "🚫 You declined to answer",
    declinedBy: (mention: string) => `🚫 ${mention} declined to answer`,
    sentenceBreak: ". ",
    deadlineDate: (month: number, day: number) => `${MONTHS[month - 1] ?? month} ${day}`,
  },
};
