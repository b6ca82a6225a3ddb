import { plural } from "./en-words.ts";

/**
 * The demo agent's script (harness/agents/demo.ts): the whole product can be watched without a model.
 * Chinese (zh_cn, the seeds' text) and English (en_us) side by side; `typeof zhDemo` holds the English to
 * the Chinese shape, so a missing or misshapen entry is a type error here.
 */

export const zhDemo = {
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
};

export const enDemo: typeof zhDemo = {
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
};
