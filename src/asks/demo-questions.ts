import { currentLocale, type Locale } from "../strings/index.ts";
import type { AskInput } from "./schema.ts";

/** The demo agent's questions (DESIGN §11): a single choice with previews, and a multiple choice. Pure. */
export const DEMO_QUESTIONS = {
  deploy: {
    question: "新服务要用哪种方式部署？",
    header: "部署方式",
    multiSelect: false,
    options: [
      {
        label: "Docker（推荐）",
        description: "构建镜像，沿用现有的 CI 流水线",
        preview:
          '```dockerfile\nFROM node:20-slim\nWORKDIR /app\nCOPY . .\nRUN npm ci --omit=dev\nCMD ["npm", "start"]\n```',
      },
      {
        label: "Kubernetes",
        description: "部署到集群，自动扩缩容",
        preview: "```yaml\napiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n```",
      },
      {
        label: "systemd",
        description: "直接部署在虚拟机上，最简单",
        preview: "```ini\n[Service]\nExecStart=/usr/bin/npm start\nRestart=always\n```",
      },
    ],
  },
  features: {
    question: "需要同时开启哪些功能？",
    header: "附加功能",
    multiSelect: true,
    options: [
      { label: "暗色模式", description: "界面支持在明暗主题之间切换" },
      { label: "多语言", description: "中英文界面" },
      { label: "导出 PDF", description: "把报告导出为 PDF 文件" },
    ],
  },
} as const satisfies Record<string, AskInput["questions"][number]>;

/** The same questions for an English-speaking tenant (issue 19): same shape, options and previews. */
export const DEMO_QUESTIONS_EN = {
  deploy: {
    question: "How should the new service be deployed?",
    header: "Deployment",
    multiSelect: false,
    options: [
      {
        label: "Docker (recommended)",
        description: "Build an image and keep the existing CI pipeline",
        preview: DEMO_QUESTIONS.deploy.options[0].preview,
      },
      {
        label: "Kubernetes",
        description: "Deploy to the cluster, with autoscaling",
        preview: DEMO_QUESTIONS.deploy.options[1].preview,
      },
      {
        label: "systemd",
        description: "Run it straight on a VM; the simplest",
        preview: DEMO_QUESTIONS.deploy.options[2].preview,
      },
    ],
  },
  features: {
    question: "Which features should be turned on as well?",
    header: "Extras",
    multiSelect: true,
    options: [
      { label: "Dark mode", description: "Let the UI switch between light and dark themes" },
      { label: "Languages", description: "Chinese and English UI" },
      { label: "PDF export", description: "Export reports as PDF files" },
    ],
  },
} as const satisfies Record<string, AskInput["questions"][number]>;

/** The demo's questions in the bot's language. */
export function demoQuestions(
  locale: Locale = currentLocale(),
): typeof DEMO_QUESTIONS | typeof DEMO_QUESTIONS_EN {
  return locale === "en_us" ? DEMO_QUESTIONS_EN : DEMO_QUESTIONS;
}
