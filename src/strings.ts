import { en } from "./strings-en.ts";

/**
 * Every user-facing string, in one place: Chinese (zh_cn) as in the seeds, here, and English (en_us) with
 * the same keys in `strings-en.ts`. The bot's locale is chosen once at start-up (`selectLocale`, from
 * BOT_LOCALE or FEISHU_DOMAIN); cards carry every locale, and toasts answer in the operator's.
 */
/** The seed's words for an answer left empty (feishu-card-ask-design §4.3); `unanswered` puts them after the question. */
const NEED_ANSWER = "请至少选择一项或填写其他";

export const zh = {
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
  },
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
  /** Why a run on a real model failed: each names what the operator can check or change. */
  model: {
    unauthorized: "模型服务返回 401：检查 OPENAI_API_KEY",
    forbidden: (model: string) => `模型服务返回 403：检查 OPENAI_API_KEY 是否有权使用模型 ${model}`,
    notFound: (model: string) =>
      `模型服务返回 404：检查 OPENAI_MODEL（当前为 ${model}）是否存在，以及 OPENAI_BASE_URL 是否指向 API 根路径（通常以 /v1 结尾）`,
    rejected: (status: number, detail: string) =>
      `模型服务拒绝了请求（${status}）：${detail}（若提示不支持 tools，请换一个支持工具调用的模型）`,
    rateLimited: (retries: number) =>
      `模型服务限流（429），重试 ${retries} 次后仍失败：稍后再试，或提高该密钥的速率限额`,
    serverError: (status: number, retries: number) =>
      `模型服务出错（${status}），重试 ${retries} 次后仍失败：稍后再试`,
    timedOut: (seconds: number, retries: number) =>
      `模型服务 ${seconds} 秒内没有响应，重试 ${retries} 次后仍失败：检查 OPENAI_BASE_URL 是否可达，或稍后再试`,
    unreachable: (baseUrl: string, reason: string) =>
      `无法连接模型服务 ${baseUrl}（${reason}）：检查 OPENAI_BASE_URL`,
    other: (detail: string) => `调用模型失败：${detail}`,
    tooManySteps: (steps: number) => `模型连续 ${steps} 轮调用工具仍未给出答复，已停止`,
    emptyAnswer: "（模型没有返回文字）",
    askTitle: "等待你的回答",
    delegateTitle: (task: string) => `委派：${task || "子任务"}`,
    requestBudgetSpent: (limit: number) =>
      `本次任务已用完模型请求预算（${limit} 次，含所有子代理），已停止：可拆成更小的任务，或调高 MAX_MODEL_REQUESTS_PER_RUN`,
    subAgentBudgetSpent: (limit: number) =>
      `本次任务已启动 ${limit} 个子代理，达到上限（MAX_SUBAGENTS_PER_RUN），请直接完成剩下的工作`,
    delegateTooDeep: (depth: number) =>
      `子代理最多嵌套 ${depth} 层（MAX_DELEGATE_DEPTH），请直接完成这个子任务`,
  },
  /** Cards and waits of outside agents (agents-api): the card always says which agent asks, and why. */
  agents: {
    working: (agent: string) => `${agent} 正在处理…`,
    ended: (agent: string, elapsed: string) => `${agent} · ${elapsed}`,
    askReason: (reason: string) => `**提问原因：** ${reason}`,
    /** The progress notification of a waiting MCP call: "等待 Alice 在飞书回答 · 3 分钟". */
    waiting: (name: string, minutes: number) =>
      minutes < 1 ? `等待 ${name} 在飞书回答` : `等待 ${name} 在飞书回答 · ${minutes} 分钟`,
    questionCardTitle: (agent: string) => `${agent} 有问题要问你`,
    /** The session page's header for an outside agent's task. */
    sessionTitle: (agent: string) => `${agent} 的任务`,
    answered: "已收到回答，谢谢！",
    notAnswered: "提问已结束。",
  },
  demo: {
    scanned: (files: number) => `扫描了 ${files} 个文件`,
    // A step's title says what is done and its summary what came of it, so the card line never repeats itself.
    deployTitle: (label: string) => `部署方式：${label}`,
    deployed: (file: string) => `已生成 ${file}`,
    featureTitle: (label: string) => `开启功能：${label}`,
    featureApplied: (files: number) => `改动了 ${files} 个文件`,
    otherTitle: (text: string) => `按补充说明处理：${text}`,
    otherApplied: "已记入任务说明",
    chunkTitle: (index: number, total: number) => `处理第 ${index}/${total} 块`,
    chunkDone: (records: number) => `处理了 ${records} 条记录`,
    failed: "演示任务在第一步之后失败：无法连接到构建服务（这是 /fail 命令模拟的错误）",
    // Issue 19: the demo agent's remaining words, moved here from demo.ts (its questions: demo-questions.ts).
    scanTitle: "扫描工作区",
    quickDone: "**完成** 这是 `/quick` 的演示回复：只执行了一步，没有提问。",
    longDone: "**完成** `/long` 执行了 20 步，没有提问。",
    noAnswer: "**完成** 没有收到你的回答，已按推荐选项（Docker）继续。",
    doneAsChosen: "**完成** 已按你的选择执行：",
    /** A group's card is read by everyone: 你 would mean each reader. */
    doneAsSenderChose: "**完成** 已按发起人的选择执行：",
    otherAnswer: (text: string) => `其他：${text}`,
    listSeparator: "、",
    deployFallback: "部署配置",
  },
  acp: {
    notStarted: (command: string, reason: string) =>
      `无法启动 ACP 智能体 ${command}：${reason}（检查 ACP_COMMAND / ACP_ARGS）`,
    exited: (detail: string) => `ACP 智能体进程意外退出（${detail}），下一条消息会重新启动它`,
    hung: (seconds: number) =>
      `ACP 智能体 ${seconds} 秒没有任何进展，已停止它（ACP_IDLE_TIMEOUT_MS）；下一条消息会重新启动它`,
    failed: (detail: string) => `ACP 智能体出错：${detail}`,
    refused: "ACP 智能体拒绝了这个请求",
    emptyAnswer: "（智能体没有返回文字）",
    stoppedAt: (reason: string) => `（智能体已停止：${reason}）`,
    permissionHeader: "权限请求",
    permissionTitle: (title: string) => `请求权限：${title}`,
    permissionQuestion: (title: string, kind: string, where: string) =>
      `智能体想要${kind}：${title}${where ? `（${where}）` : ""}。允许吗？`,
    toolKinds: {
      read: "读取",
      edit: "编辑",
      delete: "删除",
      move: "移动",
      search: "搜索",
      execute: "执行命令",
      think: "思考",
      fetch: "获取网页",
      switch_mode: "切换模式",
      other: "执行操作",
    },
    optionKinds: {
      allow_once: "仅允许这一次",
      allow_always: "以后同类操作都允许",
      reject_once: "这一次不允许",
      reject_always: "以后同类操作都不允许",
    },
    planTitle: "计划",
    /** A tool call whose permission the person refused: its step's note. */
    refusedStep: "已拒绝",
    /** A tool's JSON output on its step: its shape rather than its first line (`[`). */
    jsonArray: (items: number) => `JSON 数组，${items} 项`,
    jsonObject: (total: number, keys: string) =>
      total === 0 ? "JSON 对象（空）" : `JSON 对象，${total} 个键：${keys}`,
    /** Between the keys named in `jsonObject`. */
    listSeparator: "、",
    /** Offered beside a lone permission option (a form needs two), and the label of an unnamed one. */
    rejectLabel: "不允许",
    optionFallback: "选项",
    /** "Always allow" (issue 30): a remembered permission choice, as the card's step lines say it. */
    standingScope: (kind: string, tool: string) => (tool ? `${kind}（${tool}）` : kind),
    standingAllowed: (scope: string) => `以后本会话中的「${scope}」操作都将自动允许`,
    standingRejected: (scope: string) => `以后本会话中的「${scope}」操作都将自动拒绝`,
    autoAllowed: (title: string) => `已按之前的选择自动允许：${title}`,
    autoRejected: (title: string) => `已按之前的选择自动拒绝：${title}`,
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
  /**
   * The session page and its question panel, sent to the browser as JSON inside the page (web/page-strings.ts):
   * plain strings only, so a value with a part filled in by the page names it as `{slot}` (public/page-text.ts).
   */
  web: {
    /** The page's `<html lang>`, and the locale its dates are written in. */
    lang: "zh-CN",
    page: {
      title: "会话详情",
      signOut: "退出登录",
      loading: "加载中…",
      noscript: "此页面需要启用 JavaScript。",
      signInHeading: "请先登录",
      signInBody: "登录后才能查看会话内容、回答任务中的问题。",
      signInFeishu:
        "请在与机器人的私聊中发送 /login，打开它回复的个人链接登录（群聊卡片上的链接不带任何人的身份）。",
      signInAs: "以 {name} 身份登录",
      forbiddenHeading: "无权查看此会话",
      forbiddenBody: "只有会话的创建者和在会话中发过消息的人可以查看。",
      untitledSession: "会话",
      topicBadge: "话题",
      topicBadgeTitle: "群聊中的一个话题，有自己的任务和队列",
      olderRun: "这是会话中较早的一次任务，不会再更新。",
      latestRunLink: "查看会话的当前任务",
      connectionLost: "连接已断开，正在重新连接…",
      waitingForSender: "任务正在等待发起人回答问题。",
      stepsHeading: "步骤",
      noSteps: "暂无步骤",
      preparing: "正在准备…",
      resultHeading: "结果",
      errorHeading: "失败原因",
      queueHeading: "排队中的消息",
      historyHeading: "会话中的任务",
      noTask: "这个会话还没有任务。",
      noRun: "暂无任务",
      untitledRun: "任务",
      queuedMore: "还有 {count} 条消息在排队",
      /** The tab's title: the session's, then (once a run is known) the run's status before it. */
      sessionTabTitle: "{title} · 会话详情",
      statusTabTitle: "{status} · {title}",
    },
    errors: {
      noSessionId: "链接无效：缺少会话编号。",
      unreachable: "无法连接服务器，请稍后刷新重试。",
      loadFailed: "加载失败，请稍后刷新重试。",
    },
    asks: {
      accepted: "回答已提交",
      answeredElsewhere: "问题已在其他地方回答",
      timedOut: "问题已超时",
      cancelled: "问题已取消",
      lostInTransit: "连接中断，回答没有送达，请重新提交。",
      stale: "问题已失效（可能已在其他地方回答或已超时）。",
      onlySender: "仅任务发起人可以回答。",
      invalid: "回答无效：{message}",
      offline: "连接已断开，正在重新连接，请稍后再提交。",
    },
    /** The question panel (seed ask-user-questions-design §4). */
    panel: {
      heading: "需要你的回答",
      headingOf: "需要你的回答（{index}/{total}）",
      single: "单选",
      multi: "可多选",
      other: "其他",
      otherPlaceholder: "输入你自己的回答…",
      submit: "提交",
      submitting: "提交中…",
      readOnly: "仅任务发起人可以回答",
      previewTitle: "预览",
      previewOf: "预览 · {label}",
      previewEmpty: "选择或悬停一个选项以查看预览",
      previewNone: "此选项没有预览",
    },
    /** The task's buttons on the page; the words the card has too are the card's (web/page-strings.ts). */
    run: {
      confirmYes: "确定取消",
      confirmNo: "返回",
      onlyOwner: "仅任务发起人可以操作。",
    },
    /** The session's standing permissions ("always allow", issue 30); `{scope}` as the card words it. */
    permissions: {
      heading: "本会话记住的权限选择",
      allowed: "自动允许：{scope}",
      rejected: "自动拒绝：{scope}",
      chosenOn: "（选择于：{title}）",
      revoke: "撤销",
      revoked: "已撤销，下次会再询问。",
      revokeFailed: "撤销失败，请稍后重试。",
    },
    /** A step icon's accessible name. */
    icons: {
      done: "已完成",
      failed: "失败",
      running: "进行中",
      pending: "未开始",
      stopped: "已停止",
    },
  },
  /** The server's own small pages after a sign-in link or `/auth/local` (web/auth.ts). */
  signIn: {
    linkExpired: "登录链接已过期",
    linkInvalid: "登录链接无效",
    linkUsed: "登录链接已使用过",
    linkHelp: "请在与机器人的私聊中发送 /login，获取新的个人链接后再打开。",
    noSuchUser: "没有这个用户",
    localUsers: (list: string) => `可选的本地用户：${list}`,
    localUser: (name: string, openId: string) => `${name}（${openId}）`,
    listSeparator: "、",
    noLocalUsers: "无",
  },
};

/** The shape every locale fills in. */
export type Strings = typeof zh;

/** Feishu's own locale codes (card `config.locales`, `i18n_content` keys, the toast's `i18n`). */
export const LOCALES = ["zh_cn", "en_us"] as const;
export type Locale = (typeof LOCALES)[number];
export const catalogues: Readonly<Record<Locale, Strings>> = { zh_cn: zh, en_us: en };

let botLocale: Locale = "zh_cn";
/**
 * The bot's catalogue. A live binding: `selectLocale` switches it once at start-up, so code that imports
 * `strings` (replies, summaries, the agents' words) speaks the bot's language without being handed it.
 */
export let strings: Strings = zh;

export function selectLocale(locale: Locale): void {
  botLocale = locale;
  strings = catalogues[locale];
}

export function currentLocale(): Locale {
  return botLocale;
}

/** The locales a card is written in: the bot's first (its `content`), then the others (`i18n_content`). */
export function cardLocales(): Locale[] {
  return [botLocale, ...LOCALES.filter((locale) => locale !== botLocale)];
}

/** One text in every locale. */
export type Localized = Record<Locale, string>;

/** A catalogue whose every text comes back in every locale: for answers written before the reader is known. */
export type Bilingual<T> = T extends string
  ? Localized
  : T extends (...args: infer A) => string
    ? (...args: A) => Localized
    : { [K in keyof T]: Bilingual<T[K]> };

export const bilingual: Bilingual<Strings> = both(catalogues);

/** One text worded by each locale's catalogue, for texts whose parts are worded too (a date in a sentence). */
export function inEveryLocale(word: (s: Strings) => string): Localized {
  return { zh_cn: word(catalogues.zh_cn), en_us: word(catalogues.en_us) };
}

function both(tables: Readonly<Record<Locale, unknown>>): Bilingual<Strings> {
  // The walk is untyped (keys and leaves of one table mirror the other's); `Strings` for every locale makes
  // the shapes equal, and strings-catalogue.test.ts checks the result leaf by leaf.
  return walk(tables) as Bilingual<Strings>;
}

function walk(tables: Readonly<Record<Locale, unknown>>): unknown {
  const first = tables.zh_cn;
  if (typeof first === "string") return pickEach(tables, (value) => String(value));
  if (typeof first === "function") {
    return (...args: unknown[]) =>
      pickEach(tables, (value) => (typeof value === "function" ? String(value(...args)) : ""));
  }
  if (first === null || typeof first !== "object") return undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(first)) {
    out[key] = walk({ zh_cn: member(tables.zh_cn, key), en_us: member(tables.en_us, key) });
  }
  return out;
}

function pickEach(tables: Readonly<Record<Locale, unknown>>, text: (value: unknown) => string): Localized {
  return { zh_cn: text(tables.zh_cn), en_us: text(tables.en_us) };
}

function member(table: unknown, key: string): unknown {
  return table !== null && typeof table === "object" ? Reflect.get(table, key) : undefined;
}
