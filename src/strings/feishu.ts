import { plural } from "./en-words.ts";

/**
 * The Feishu channel's own words: toasts, replies and texts in chat, a topic's and a chat's session title.
 * Chinese (zh_cn, the seeds' text) and English (en_us) side by side; `typeof zhFeishu` holds the English to
 * the Chinese shape, so a missing or misshapen entry is a type error here.
 */

export const zhFeishu = {
  feishu: {
    onlySender: "仅消息发送者可操作",
    /** Someone else clicked a question's form or 延长: who may answer, by name when the bot knows it. */
    onlyAnswerer: (name: string) => `仅 @${name} 可以回答此问题`,
    onlyAnswererUnnamed: "仅任务发起人可以回答此问题",
    submitted: "已提交",
    /** A single choice and 其他 text both given: the text is the answer (answer-rule.ts); the toast says so. */
    submittedOtherWins: (numbers: string) =>
      `已提交：第 ${numbers} 题按「其他」中填写的内容作答，所选项未采用`,
    numberSeparator: "、",
    askExpired: "问题已失效",
    /** A reply quoting the card from another thread than the card's (issue 30): nothing was answered. */
    replyElsewhere: "请在卡片所在的对话里直接回复卡片作答，这条回复没有作为回答",
    unknownAction: "操作已失效，请刷新后重试",
    callbackTimeout: "处理超时，请稍后重试",
    taskCancelled: "已取消任务",
    taskNotRunning: "任务已结束",
    retried: "已重新开始",
    notRetryable: "当前任务无法重试",
    promoted: "已插队",
    unqueued: "已取消排队",
    queueGone: "这条排队消息已不存在",
    askPing: (count: number) => `有 ${count} 个问题等你回答，请在上方卡片中作答`,
    nonText: "暂时只能处理文字消息，请用文字描述你的需求。",
    emptyText: "请在 @ 我之后写下你的需求。",
    signInLink: (days: number) =>
      `你的个人登录链接（${days} 天内有效，只能打开一次，仅限本人使用，请勿转发）。打开后即可在会话详情页查看任务、回答问题：`,
    signInPrivateOnly: "个人登录链接只在私聊中发送：请在与我的私聊中发送 /login。",
    /** An MCP form's submit: a required field left empty, or a number field holding something else. */
    elicitMissing: (title: string) => `「${title}」是必填项`,
    elicitBadNumber: (title: string) => `「${title}」需要填写数字`,
    elicitDeclined: "已拒绝",
    /** 拒绝回答 on an outside agent's question: the agent reads status "declined". */
    askDeclined: "已拒绝回答",
    elicitCancelled: "已取消",
    cardGone: "这个任务的进度卡片已被撤回或删除，任务已停止，其中的问题也已失效。如需继续，请重新发送消息。",
    cardGoneError: "进度卡片已被撤回或删除",
    queueFull: (limit: number) =>
      `前面已有 ${limit} 条消息在排队，这条消息没有加入队列。请等前面的任务完成后再发送。`,
    /** The app's allow-list (issue 30) lists neither the sender nor this group: nothing runs. */
    notAllowed: "你没有使用这个机器人的权限，请联系管理员把你（或这个群）加入允许名单。",
  },
  topics: {
    /** A topic session's title on the session page and in the hub: the group, then the topic's first words. */
    sessionTitle: (firstWords: string) => `飞书群聊话题：${firstWords}`,
  },
  /** A chat's session title, stored when the session is made and shown on the session page and in the hub. */
  sessions: {
    privateTitle: "飞书私聊",
    groupTitle: "飞书群聊",
  },
};

export const enFeishu: typeof zhFeishu = {
  feishu: {
    onlySender: "Only the person who sent the message can do this",
    onlyAnswerer: (name: string) => `Only @${name} can answer this question`,
    onlyAnswererUnnamed: "Only the task's sender can answer this question",
    submitted: "Submitted",
    submittedOtherWins: (numbers: string) =>
      `Submitted: for question ${numbers}, the text under Other is the answer; the option picked above was not used`,
    numberSeparator: ", ",
    askExpired: "This question is no longer open",
    replyElsewhere: "Reply to the card where it was posted to answer; this reply was not taken as an answer",
    unknownAction: "This action is out of date. Refresh and try again",
    callbackTimeout: "Timed out. Please try again later",
    taskCancelled: "Task cancelled",
    taskNotRunning: "The task has already ended",
    retried: "Started again",
    notRetryable: "This task cannot be retried",
    promoted: "Moved to the front of the queue",
    unqueued: "Removed from the queue",
    queueGone: "This queued message no longer exists",
    askPing: (count: number) =>
      `${count} ${plural(count, "question")} ${count === 1 ? "is" : "are"} waiting for your answer. Please answer on the card above`,
    nonText: "I can only handle text messages for now. Please describe what you need in words.",
    emptyText: "Please write what you need after @-mentioning me.",
    signInLink: (days: number) =>
      `Your personal sign-in link (valid for ${days} ${plural(days, "day")}, opens once, for you only, do not forward it). Open it to see your tasks and answer questions on the session page:`,
    signInPrivateOnly: "Sign-in links are only sent in private chats: send /login to me in a private chat.",
    elicitMissing: (title: string) => `"${title}" is required`,
    elicitBadNumber: (title: string) => `"${title}" must be a number`,
    elicitDeclined: "Declined",
    askDeclined: "Declined to answer",
    elicitCancelled: "Cancelled",
    cardGone:
      "The progress card for this task was recalled or deleted, so the task was stopped and its questions closed. To continue, send your message again.",
    cardGoneError: "The progress card was recalled or deleted",
    queueFull: (limit: number) =>
      `${limit} ${plural(limit, "message")} ${limit === 1 ? "is" : "are"} already queued, so this message was not added. Please send it again once the earlier tasks are done.`,
    notAllowed:
      "You are not allowed to use this bot. Ask its administrator to add you (or this group) to its allow-list.",
  },
  topics: {
    sessionTitle: (firstWords: string) => `Group topic: ${firstWords}`,
  },
  sessions: {
    privateTitle: "Private chat",
    groupTitle: "Group chat",
  },
};
