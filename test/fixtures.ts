import type { AskInput } from "../src/asks/schema.ts";

/** A valid two-question ask: one single-select with previews, one multi-select. */
export function sampleAsk(): AskInput {
  return {
    questions: [
      {
        question: "Which framework should we use for the new module?",
        header: "Framework",
        multiSelect: false,
        options: [
          {
            label: "Vue 3 (Recommended)",
            description: "Composition API + TypeScript",
            preview: "```ts\ncreateApp()\n```",
          },
          { label: "React", description: "Larger ecosystem" },
        ],
      },
      {
        question: "Which features should we include?",
        header: "Features",
        multiSelect: true,
        options: [
          { label: "Dark mode", description: "Toggle themes" },
          { label: "i18n", description: "Multi-language" },
          { label: "PDF export", description: "Generate PDF reports" },
        ],
      },
    ],
    metadata: { source: "test" },
  };
}
