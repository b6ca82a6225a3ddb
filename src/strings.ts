/**
 * Every user-facing string, in one place. Chinese as in the seeds; an English table with the same keys
 * can be added later and chosen per tenant or user.
 */
export const zh = {
  askUnavailable: "当前通道无法向用户提问",
  needAnswer: "请至少选择一项或填写其他",
  answeredSummary: (count: number) => `回答了 ${count} 个问题`,
  askTimedOutSummary: "用户未在规定时间内回答",
  askCancelledSummary: "提问已取消",
  askInvalidSummary: (detail: string) => `提问参数无效: ${detail}`,
  toolFailedSummary: (detail: string) => `失败: ${detail}`,
  recovering: "任务正在恢复执行",
  demo: {
    scanned: (files: number) => `扫描了 ${files} 个文件`,
    applied: (label: string) => `已应用: ${label}`,
    failed: "演示任务在第一步之后失败:无法连接到构建服务(这是 /fail 命令模拟的错误)",
  },
} as const;

export type Strings = typeof zh;
export const strings: Strings = zh;
