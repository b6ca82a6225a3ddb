/**
 * What a run's model requests cost, as the model service reported it (issue 30's usage footer). Pure.
 *
 * Each field is a sum over every request of the run, and only known when every request reported it: a
 * request that said nothing about its output tokens makes the run's output unknown, not a smaller number.
 * The card and the session page leave an unknown part out, so no figure shown is a guess.
 */
export interface RunUsage {
  inputTokens?: number;
  outputTokens?: number;
  /** Input tokens the service read from its prompt cache (a part of `inputTokens`). */
  cachedTokens?: number;
  /** The model that answered, as the service named it; several, joined, when they differed. */
  model?: string;
}

const COUNTS = ["inputTokens", "outputTokens", "cachedTokens"] as const;
const MODEL_SEPARATOR = " + ";

/** A count a service reported, or nothing: negative, fractional or absurd values are not counts. */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** `sum` (the run so far; undefined before its first request) with one more request's `next`. */
export function addUsage(sum: RunUsage | undefined, next: RunUsage): RunUsage {
  const total: RunUsage = {};
  for (const key of COUNTS) {
    const value = sum === undefined ? next[key] : addKnown(sum[key], next[key]);
    if (value !== undefined) total[key] = value;
  }
  const model = joinModels(sum?.model, next.model);
  if (model !== undefined) total.model = model;
  return total;
}

function addKnown(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}

function joinModels(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return a.split(MODEL_SEPARATOR).includes(b) ? a : `${a}${MODEL_SEPARATOR}${b}`;
}

/** Whether anything of it is known: a run without any of it shows no usage at all. */
export function hasUsage(usage: RunUsage | undefined): usage is RunUsage {
  return usage !== undefined && (usage.model !== undefined || COUNTS.some((key) => usage[key] !== undefined));
}

/**
 * The usage as the card's footer and the session page write it: `↑1,234 ↓567 · gpt-4o`, counts grouped for
 * `lang` (a BCP 47 tag, `zh-CN`, `en`), any unknown part left out; undefined when neither counts nor model
 * are known. Pure and free of Node, so the session page's bundle uses this same function.
 */
export function usageText(usage: RunUsage | undefined, lang: string): string | undefined {
  if (usage === undefined) return undefined;
  const count = new Intl.NumberFormat(lang, { maximumFractionDigits: 0 });
  const tokens = [
    usage.inputTokens === undefined ? undefined : `↑${count.format(usage.inputTokens)}`,
    usage.outputTokens === undefined ? undefined : `↓${count.format(usage.outputTokens)}`,
  ].filter((part) => part !== undefined);
  const parts = [tokens.join(" "), usage.model ?? ""].filter((part) => part !== "");
  return parts.length > 0 ? parts.join(USAGE_SEPARATOR) : undefined;
}

/** Between the parts of a footer: language-neutral, like the arrows. */
export const USAGE_SEPARATOR = " · ";
