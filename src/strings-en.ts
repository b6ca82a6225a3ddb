/**
 * The English (en_us) catalogue: the same keys and arguments as the Chinese one in `strings.ts`, written for
 * Lark tenants and English clients. Sentence case; the same meaning, not a word-for-word rendering.
 * `catalogues` in `strings.ts` holds it to the `Strings` shape, so a missing or misshapen entry is a type error
 * there; this file imports nothing, so the two catalogues never load each other.
 */
export const en = {
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
  },
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
  model: {
    unauthorized: "The model service returned 401: check OPENAI_API_KEY",
    forbidden: (model: string) =>
      `The model service returned 403: check that OPENAI_API_KEY may use the model ${model}`,
    notFound: (model: string) =>
      `The model service returned 404: check that OPENAI_MODEL (now ${model}) exists and that OPENAI_BASE_URL points at the API root (usually ending in /v1)`,
    rejected: (status: number, detail: string) =>
      `The model service rejected the request (${status}): ${detail} (if it says tools are not supported, switch to a model that supports tool calls)`,
    rateLimited: (retries: number) =>
      `The model service is rate limiting (429) and still failed after ${retries} ${plural(retries, "retry", "retries")}: try again later, or raise this key's rate limit`,
    serverError: (status: number, retries: number) =>
      `The model service failed (${status}) and still failed after ${retries} ${plural(retries, "retry", "retries")}: try again later`,
    timedOut: (seconds: number, retries: number) =>
      `The model service did not respond within ${seconds} s, even after ${retries} ${plural(retries, "retry", "retries")}: check that OPENAI_BASE_URL is reachable, or try again later`,
    unreachable: (baseUrl: string, reason: string) =>
      `Could not connect to the model service at ${baseUrl} (${reason}): check OPENAI_BASE_URL`,
    other: (detail: string) => `The model call failed: ${detail}`,
    tooManySteps: (steps: number) =>
      `The model called tools for ${steps} rounds in a row without answering, so it was stopped`,
    emptyAnswer: "(The model returned no text)",
    askTitle: "Waiting for your answer",
    delegateTitle: (task: string) => `Delegated: ${task || "subtask"}`,
    requestBudgetSpent: (limit: number) =>
      `This task used up its model request budget (${limit} requests, sub-agents included) and was stopped: split it into smaller tasks, or raise MAX_MODEL_REQUESTS_PER_RUN`,
    subAgentBudgetSpent: (limit: number) =>
      `This task has started ${limit} sub-agents, the limit (MAX_SUBAGENTS_PER_RUN). Finish the remaining work yourself`,
    delegateTooDeep: (depth: number) =>
      `Sub-agents may nest at most ${depth} ${plural(depth, "level")} deep (MAX_DELEGATE_DEPTH). Finish this subtask yourself`,
  },
  agents: {
    working: (agent: string) => `${agent} is working…`,
    ended: (agent: string, elapsed: string) => `${agent} · ${elapsed}`,
    askReason: (reason: string) => `**Why it asks:** ${reason}`,
    // English serves Lark tenants and English-speaking Feishu ones alike: no product name here.
    waiting: (name: string, minutes: number) =>
      minutes < 1
        ? `Waiting for ${name} to answer in chat`
        : `Waiting for ${name} to answer in chat · ${minutes} min`,
    questionCardTitle: (agent: string) => `${agent} has a question for you`,
    sessionTitle: (agent: string) => `${agent}'s task`,
    answered: "Got your answer, thank you!",
    notAnswered: "The question has closed.",
  },
  demo: {
    scanned: (files: number) => `Scanned ${files} ${plural(files, "file")}`,
    deployTitle: (label: string) => `Deployment: ${label}`,
    deployed: (file: string) => `Generated ${file}`,
    featureTitle: (label: string) => `Turn on: ${label}`,
    featureApplied: (files: number) => `Changed ${files} ${plural(files, "file")}`,
    otherTitle: (text: string) => `Following the extra note: ${text}`,
    otherApplied: "Added to the task description",
    chunkTitle: (index: number, total: number) => `Processing chunk ${index}/${total}`,
    chunkDone: (records: number) => `Processed ${records} ${plural(records, "record")}`,
    failed:
      "The demo task failed after its first step: could not reach the build service (an error simulated by the /fail command)",
    scanTitle: "Scan the workspace",
    quickDone: "**Done** — this is the `/quick` demo reply: one step, no questions.",
    longDone: "**Done** — `/long` ran 20 steps and asked nothing.",
    noAnswer: "**Done** — no answer came, so it went on with the recommended option (Docker).",
    doneAsChosen: "**Done** — carried out as you chose:",
    doneAsSenderChose: "**Done** — carried out as the sender chose:",
    otherAnswer: (text: string) => `Other: ${text}`,
    listSeparator: ", ",
    deployFallback: "deployment config",
  },
  acp: {
    notStarted: (command: string, reason: string) =>
      `Could not start the ACP agent ${command}: ${reason} (check ACP_COMMAND / ACP_ARGS)`,
    exited: (detail: string) =>
      `The ACP agent process exited unexpectedly (${detail}); the next message will start it again`,
    hung: (seconds: number) =>
      `The ACP agent made no progress for ${seconds} s, so it was stopped (ACP_IDLE_TIMEOUT_MS); the next message will start it again`,
    failed: (detail: string) => `The ACP agent failed: ${detail}`,
    refused: "The ACP agent refused this request",
    emptyAnswer: "(The agent returned no text)",
    stoppedAt: (reason: string) => `(The agent stopped: ${reason})`,
    permissionHeader: "Permission",
    permissionTitle: (title: string) => `Permission requested: ${title}`,
    permissionQuestion: (title: string, kind: string, where: string) =>
      `The agent wants to ${kind}: ${title}${where ? ` (${where})` : ""}. Allow it?`,
    toolKinds: {
      read: "read",
      edit: "edit",
      delete: "delete",
      move: "move",
      search: "search",
      execute: "run a command",
      think: "think",
      fetch: "fetch a web page",
      switch_mode: "switch modes",
      other: "take an action",
    },
    optionKinds: {
      allow_once: "Allow this time only",
      allow_always: "Always allow this kind of action",
      reject_once: "Not this time",
      reject_always: "Never allow this kind of action",
    },
    planTitle: "Plan",
    refusedStep: "Declined",
    jsonArray: (items: number) => `JSON array, ${items} ${items === 1 ? "item" : "items"}`,
    jsonObject: (total: number, keys: string) =>
      total === 0 ? "JSON object (empty)" : `JSON object, ${total} ${total === 1 ? "key" : "keys"}: ${keys}`,
    listSeparator: ", ",
    rejectLabel: "Don't allow",
    optionFallback: "Option",
    standingScope: (kind: string, tool: string) => (tool ? `${kind} (${tool})` : kind),
    standingAllowed: (scope: string) => `From now on allowed in this session: ${scope}`,
    standingRejected: (scope: string) => `From now on refused in this session: ${scope}`,
    autoAllowed: (title: string) => `Allowed automatically, as chosen before: ${title}`,
    autoRejected: (title: string) => `Refused automatically, as chosen before: ${title}`,
  },
  topics: {
    sessionTitle: (firstWords: string) => `Group topic: ${firstWords}`,
  },
  sessions: {
    privateTitle: "Private chat",
    groupTitle: "Group chat",
  },
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

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** English needs a plural where Chinese does not: "1 question", "2 questions". */
function plural(count: number, one: string, many = `${one}s`): string {
  return count === 1 ? one : many;
}
