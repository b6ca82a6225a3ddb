import { FEISHU_CODES, FeishuApiError } from "./messenger.ts";
import type { PatchFailure } from "./publish-policy.ts";

/** Reads a failed PATCH once, into the plain data the policy decides on. */
export function classifyFailure(error: unknown): PatchFailure {
  if (!(error instanceof FeishuApiError)) return { kind: "unexpected" };
  return {
    kind: "api",
    code: error.feishuCode ?? error.httpStatus,
    gone: error.messageGone,
    rateLimited: error.rateLimited,
    perMessage: error.feishuCode === FEISHU_CODES.patchRateLimited,
    retryAfterMs: error.retryAfterMs,
    refused: error.cardRefused,
    audited: error.auditRefused,
    transient: error.transient,
    answered: error.httpStatus !== undefined,
  };
}
