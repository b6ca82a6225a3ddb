/**
 * The session page (its template and script, web/page-strings.ts) and the server's small sign-in pages.
 * Chinese (zh_cn, the seeds' text) and English (en_us) side by side; `typeof zhWeb` holds the English to
 * the Chinese shape, so a missing or misshapen entry is a type error here.
 */

export const zhWeb = {
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
      unavailable: "回答暂时没有保存（服务的数据库不可用），问题仍在等待，请稍后再提交。",
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
      /** The agent offered no one-time option and was sent its own "always": revoking here cannot reach it. */
      agentKeeps: "智能体也自行记住了这个选择：在这里撤销只停止本会话的自动处理，撤不回智能体自己的记录。",
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

export const enWeb: typeof zhWeb = {
  web: {
    lang: "en",
    page: {
      title: "Session details",
      signOut: "Sign out",
      loading: "Loading…",
      noscript: "This page needs JavaScript.",
      signInHeading: "Please sign in",
      signInBody: "Sign in to see this session and answer the task's questions.",
      signInFeishu:
        "Send /login to the bot in a private chat and open the personal link it replies with (links on group cards carry nobody's identity).",
      signInAs: "Sign in as {name}",
      forbiddenHeading: "You may not view this session",
      forbiddenBody: "Only the session's creator and people who have written in it can view it.",
      untitledSession: "Session",
      topicBadge: "Topic",
      topicBadgeTitle: "A topic in a group chat, with its own tasks and queue",
      olderRun: "This is an earlier task of the session; it will not update any more.",
      latestRunLink: "See the session's current task",
      connectionLost: "Connection lost, reconnecting…",
      waitingForSender: "The task is waiting for its sender to answer a question.",
      stepsHeading: "Steps",
      noSteps: "No steps yet",
      preparing: "Getting ready…",
      resultHeading: "Result",
      errorHeading: "Why it failed",
      queueHeading: "Queued messages",
      historyHeading: "Tasks in this session",
      noTask: "This session has no task yet.",
      noRun: "No task",
      untitledRun: "Task",
      // No plural to choose: the count stands on its own after the colon.
      queuedMore: "Messages still queued: {count}",
      sessionTabTitle: "{title} · Session details",
      statusTabTitle: "{status} · {title}",
    },
    errors: {
      noSessionId: "Invalid link: the session id is missing.",
      unreachable: "Cannot reach the server. Please refresh in a moment.",
      loadFailed: "Loading failed. Please refresh in a moment.",
    },
    asks: {
      accepted: "Answer submitted",
      answeredElsewhere: "The question was answered elsewhere",
      timedOut: "The question timed out",
      cancelled: "The question was cancelled",
      lostInTransit: "The connection dropped before your answer arrived. Please submit it again.",
      stale: "The question is no longer open (it may have been answered elsewhere or timed out).",
      onlySender: "Only the task's sender can answer.",
      invalid: "Invalid answer: {message}",
      offline: "Connection lost, reconnecting. Please submit again in a moment.",
      unavailable:
        "Your answer was not saved (the service's database is unavailable); the question is still open. Please submit it again in a moment.",
    },
    panel: {
      heading: "Your answer is needed",
      headingOf: "Your answer is needed ({index}/{total})",
      single: "Choose one",
      multi: "Choose any",
      other: "Other",
      otherPlaceholder: "Type your own answer…",
      submit: "Submit",
      submitting: "Submitting…",
      readOnly: "Only the task's sender can answer",
      previewTitle: "Preview",
      previewOf: "Preview · {label}",
      previewEmpty: "Choose or hover over an option to see its preview",
      previewNone: "This option has no preview",
    },
    run: {
      confirmYes: "Yes, cancel it",
      confirmNo: "Go back",
      onlyOwner: "Only the task's sender can do this.",
    },
    permissions: {
      heading: "Choices remembered in this session",
      allowed: "Allowed automatically: {scope}",
      rejected: "Refused automatically: {scope}",
      chosenOn: "(chosen on: {title})",
      revoke: "Revoke",
      revoked: "Revoked: you will be asked again next time.",
      revokeFailed: "Could not revoke; please try again later.",
      agentKeeps:
        "The agent keeps this choice itself as well: revoking it here stops only this session's automatic answers, not the agent's own record.",
    },
    icons: {
      done: "Done",
      failed: "Failed",
      running: "In progress",
      pending: "Not started",
      stopped: "Stopped",
    },
  },
  signIn: {
    linkExpired: "Sign-in link expired",
    linkInvalid: "Invalid sign-in link",
    linkUsed: "Sign-in link already used",
    linkHelp: "Send /login to the bot in a private chat to get a new personal link, then open that one.",
    noSuchUser: "No such user",
    localUsers: (list: string) => `Local users you can sign in as: ${list}`,
    localUser: (name: string, openId: string) => `${name} (${openId})`,
    listSeparator: ", ",
    noLocalUsers: "none",
  },
};
