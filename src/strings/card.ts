import { plural } from "./en-words.ts";
import type { Locale } from "./locales.ts";

/**
 * The progress card and its forms: the header, steps, buttons, the status words (the session page takes them
 * too, through web/page-strings.ts).
 * Chinese (zh_cn, the seeds' text) and English (en_us) side by side; `typeof zhCard` holds the English to
 * the Chinese shape, so a missing or misshapen entry is a type error here.
 */

export const zhCard = {
  card: {
    status: {
      running: "执行中",
      waiting: "等待回答",
      recovering: "恢复中",
      completed: "已完成",
      failed: "失败",
      cancelled: "已取消",
      rejected: "已拒绝",
    },
    untitledTask: "任务",
    summaryRunning: (steps: number) => (steps > 0 ? `执行中 · 已完成 ${steps} 步` : "执行中"),
    summaryWaiting: (questions: number) => `等待你回答 ${questions} 个问题`,
    summaryCompleted: "已完成",
    summaryFailed: (error: string) => `失败：${error}`,
    summaryCancelled: "已取消",
    /** The chat list's line for a task whose agent stopped because the person refused its request. */
    summaryRejected: "已拒绝智能体的请求",
    stepsHeading: "**步骤**",
    earlierSteps: (count: number) => `…前面还有 ${count} 步`,
    noSteps: "正在准备…",
    /** A step that was under way when its task was cancelled. */
    stepStopped: "已停止",
    askHeading: (index: number, total: number) =>
      total > 1 ? `**需要你的回答（${index}/${total}）**` : "**需要你的回答**",
    /** A group card: `mention` is the sender's `<at>` tag, which Feishu shows as @name (bold left off it). */
    askHeadingGroup: (mention: string, index: number, total: number) =>
      `**等待** ${mention} **回答${total > 1 ? `（${index}/${total}）` : ""}**`,
    askHeadingSender: (index: number, total: number) =>
      `**等待发起人回答${total > 1 ? `（${index}/${total}）` : ""}**`,
    summaryWaitingSender: (questions: number) => `等待发起人回答 ${questions} 个问题`,
    /** The bot's question step on a group card: whom it waits for (`mention` is an `<at>`). */
    askStepGroup: (mention: string) => `等待 ${mention} 回答`,
    selectPlaceholder: "请选择",
    /** A question's line on the form: its header in brackets, then the question (both already escaped). */
    questionLine: (header: string, question: string) => `**【${header}】** ${question}`,
    /** The same line when the card holds several questions: its number across the card (asks/question-numbers.ts). */
    numberedQuestionLine: (number: number, header: string, question: string) =>
      `**${number}.【${header}】** ${question}`,
    /** A question's header in the 还有 N 个问题 block, and what goes between two of them. */
    quotedHeader: (header: string) => `「${header}」`,
    quotedHeaderSeparator: "",
    /** Between an option's label and its description in the form's option list. */
    optionDescriptionSeparator: "：",
    multiSelectPlaceholder: "可多选",
    otherPlaceholder: "其他(可选)",
    submit: "提交",
    /** The one submit of stacked questions (/parallel): it sends every question on the card at once. */
    submitAll: "全部提交",
    /** Under a card's questions: a text reply quoting the card answers too (issue 30). */
    replyHint: "也可以直接回复本卡片作答",
    /** An MCP server's form (elicitation): which server asks, and its two other answers and URL mode's. */
    elicitHeading: (server: string) => `**MCP 服务「${server}」请你填写**`,
    elicitUrlHeading: (server: string) => `**MCP 服务「${server}」请你打开链接完成操作**`,
    elicitOpenLink: (url: string) => `[打开链接](${url})`,
    /** Beside the link: the host it really opens, and its punycode when that reads differently. */
    elicitLinkHost: (host: string, punycode?: string) =>
      punycode ? `目标网站：${host}（${punycode}）` : `目标网站：${host}`,
    elicitDecline: "拒绝",
    elicitCancel: "取消",
    elicitDone: "完成",
    elicitYes: "是",
    elicitNo: "否",
    elicitRequired: "（必填）",
    elicitNumberPlaceholder: "请输入数字",
    elicitTextPlaceholder: "请输入",
    previewTitle: "选项预览",
    previewsOmitted: "（选项预览过长，已省略；请在会话详情中查看）",
    /** Link text for an image in the model's markdown (a card cannot show an image without an upload). */
    image: "图片",
    moreAsks: (questions: number) => `**还有 ${questions} 个问题**`,
    moreAsksLink: (url: string) => `可在[会话详情](${url})中回答，或先回答上面的问题。`,
    moreAsksLater: "请先回答上面的问题，这些问题会依次出现在卡片上。",
    resultHeading: "**结果**",
    errorHeading: "**失败原因**",
    truncated: "…（内容过长，完整内容请在会话详情中查看）",
    /** After the tenant's data-loss-prevention audit refused the card (230028; cards/redaction.ts). */
    contactsMasked: "（按企业的数据防泄漏要求，邮箱地址和电话号码已隐藏）",
    auditWithheld: "此处内容未通过企业的数据防泄漏审核，无法在卡片上显示。",
    auditWithheldLink: (url: string) =>
      `此处内容未通过企业的数据防泄漏审核，无法在卡片上显示，请在[会话详情](${url})中查看。`,
    /** A shared card too large to carry every language: what stays in the bot's language alone (issue 23). */
    oneLanguage: (language: Locale) =>
      `卡片内容太多，部分内容只以${language === "en_us" ? "英文" : "中文"}显示`,
    cancelledNote: "任务已取消。",
    cancelTask: "取消任务",
    declineAsk: "拒绝回答",
    /** The client's dialog before 取消任务 goes out. */
    cancelConfirmTitle: "取消任务？",
    cancelConfirmText: "任务会停止，等待中的问题也会失效。",
    retry: "重试",
    details: "会话详情",
    elapsed: (seconds: number) =>
      seconds < 60 ? `用时 ${seconds} 秒` : `用时 ${Math.floor(seconds / 60)} 分 ${seconds % 60} 秒`,
    queuedTitle: "消息已排队",
    queuedBody: (position: number) => `当前有任务在执行，你的消息排在第 ${position} 位，轮到时会自动开始。`,
    queuedStarted: "已开始执行，请看新的进度卡片。",
    queuedWithdrawn: "已取消排队，这条消息不会执行。",
    queuedStatus: { queued: "排队中", started: "已开始", withdrawn: "已取消排队" },
    promote: "插队",
    unqueue: "取消排队",
  },
};

export const enCard: typeof zhCard = {
  card: {
    status: {
      running: "Running",
      waiting: "Waiting for answer",
      recovering: "Resuming",
      completed: "Completed",
      failed: "Failed",
      cancelled: "Cancelled",
      rejected: "Declined",
    },
    untitledTask: "Task",
    summaryRunning: (steps: number) =>
      steps > 0 ? `Running · ${steps} ${plural(steps, "step")} done` : "Running",
    summaryWaiting: (questions: number) =>
      `Waiting for your answer to ${questions} ${plural(questions, "question")}`,
    summaryCompleted: "Completed",
    summaryFailed: (error: string) => `Failed: ${error}`,
    summaryCancelled: "Cancelled",
    summaryRejected: "Declined the agent's request",
    stepsHeading: "**Steps**",
    earlierSteps: (count: number) => `…${count} earlier ${plural(count, "step")}`,
    noSteps: "Getting ready…",
    stepStopped: "Stopped",
    askHeading: (index: number, total: number) =>
      total > 1 ? `**Your answer is needed (${index}/${total})**` : "**Your answer is needed**",
    askHeadingGroup: (mention: string, index: number, total: number) =>
      `**Waiting for** ${mention} **to answer${total > 1 ? ` (${index}/${total})` : ""}**`,
    askHeadingSender: (index: number, total: number) =>
      `**Waiting for the sender to answer${total > 1 ? ` (${index}/${total})` : ""}**`,
    summaryWaitingSender: (questions: number) =>
      `Waiting for the sender to answer ${questions} ${plural(questions, "question")}`,
    askStepGroup: (mention: string) => `Waiting for ${mention} to answer`,
    selectPlaceholder: "Choose one",
    questionLine: (header: string, question: string) => `**${header}:** ${question}`,
    numberedQuestionLine: (number: number, header: string, question: string) =>
      `**${number}. ${header}:** ${question}`,
    quotedHeader: (header: string) => `"${header}"`,
    quotedHeaderSeparator: ", ",
    optionDescriptionSeparator: ": ",
    multiSelectPlaceholder: "Choose any",
    otherPlaceholder: "Other (optional)",
    submit: "Submit",
    submitAll: "Submit all",
    replyHint: "You can also reply to this card to answer",
    elicitHeading: (server: string) => `**The MCP server "${server}" asks you to fill this in**`,
    elicitUrlHeading: (server: string) => `**The MCP server "${server}" asks you to open a link to finish**`,
    elicitOpenLink: (url: string) => `[Open link](${url})`,
    elicitLinkHost: (host: string, punycode?: string) =>
      punycode ? `Opens ${host} (${punycode})` : `Opens ${host}`,
    elicitDecline: "Decline",
    elicitCancel: "Cancel",
    elicitDone: "Done",
    elicitYes: "Yes",
    elicitNo: "No",
    elicitRequired: " (required)",
    elicitNumberPlaceholder: "Enter a number",
    elicitTextPlaceholder: "Enter text",
    previewTitle: "Option previews",
    previewsOmitted: "(Option previews are too long to show here; see them in the session details)",
    image: "image",
    moreAsks: (questions: number) => `**${questions} more ${plural(questions, "question")}**`,
    moreAsksLink: (url: string) =>
      `Answer them in the [session details](${url}), or answer the ones above first.`,
    moreAsksLater: "Answer the questions above first; these will then appear on the card one by one.",
    resultHeading: "**Result**",
    errorHeading: "**Why it failed**",
    truncated: "… (too long to show here; see the session details for the full text)",
    contactsMasked:
      "(E-mail addresses and phone numbers are hidden, as your organization's data-loss prevention requires.)",
    auditWithheld:
      "This text did not pass your organization's data-loss prevention check and cannot be shown on the card.",
    auditWithheldLink: (url: string) =>
      `This text did not pass your organization's data-loss prevention check and cannot be shown on the card; read it in the [session details](${url}).`,
    oneLanguage: (language: string) =>
      `This card is too long for every language: some of it is shown in ${language === "zh_cn" ? "Chinese" : "English"} only`,
    cancelledNote: "The task was cancelled.",
    cancelTask: "Cancel task",
    declineAsk: "Decline to answer",
    cancelConfirmTitle: "Cancel the task?",
    cancelConfirmText: "The task stops, and its open questions close.",
    retry: "Retry",
    details: "Session details",
    elapsed: (seconds: number) =>
      seconds < 60 ? `Took ${seconds} s` : `Took ${Math.floor(seconds / 60)} min ${seconds % 60} s`,
    queuedTitle: "Message queued",
    queuedBody: (position: number) =>
      `A task is already running. Your message is number ${position} in the queue and will start automatically when its turn comes.`,
    queuedStarted: "Started. Follow it on the new progress card.",
    queuedWithdrawn: "Removed from the queue. This message will not be run.",
    queuedStatus: { queued: "Queued", started: "Started", withdrawn: "Removed from queue" },
    promote: "Move to front",
    unqueue: "Remove from queue",
  },
};
