import { z } from "zod";
import { type RunUsage, tokenCount } from "../../../domain/usage.ts";

/**
 * The tokens of one ACP prompt turn, when the agent reports them (issue 30's footer). Stable ACP v1 has no
 * such field; the SDK's unstable schema gives `session/prompt`'s response an optional `usage` ("token usage
 * for this turn": `inputTokens`, `outputTokens`, `cachedReadTokens`, …), which some agents already send.
 * Read defensively, from whatever came back: anything but whole non-negative counts is no count.
 */
const usageSchema = z.object({
  usage: z
    .object({
      inputTokens: z.unknown().optional(),
      outputTokens: z.unknown().optional(),
      cachedReadTokens: z.unknown().optional(),
    })
    .nullish(),
});

export function promptUsage(response: unknown): RunUsage | undefined {
  const parsed = usageSchema.safeParse(response);
  const usage = parsed.success ? parsed.data.usage : undefined;
  if (!usage) return undefined;
  const counts: RunUsage = {};
  const input = tokenCount(usage.inputTokens);
  const output = tokenCount(usage.outputTokens);
  const cached = tokenCount(usage.cachedReadTokens);
  if (input !== undefined) counts.inputTokens = input;
  if (output !== undefined) counts.outputTokens = output;
  if (cached !== undefined) counts.cachedTokens = cached;
  return Object.keys(counts).length > 0 ? counts : undefined;
}
