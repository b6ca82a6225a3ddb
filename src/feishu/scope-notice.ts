import type { Logger } from "../logger.ts";
import { loadManifest, SCOPE_OF_CALL, scopeLine } from "./app-manifest.ts";
import type { FeishuApiError } from "./messenger.ts";

/** The app lacks every scope that grants the call (the Open API lists them in `msg`). */
export const SCOPE_MISSING_CODE = 99991672;

/**
 * A call the tenant refused for a missing scope: one warning naming the scope and its line in
 * feishu-app.json, once per scope for the life of the process — not a stack on every card.
 */
export function scopeNotices(logger: Logger): (error: FeishuApiError) => void {
  const said = new Set<string>();
  return (error) => {
    if (error.feishuCode !== SCOPE_MISSING_CODE) return;
    const scope = missingScope(error);
    if (said.has(scope)) return;
    said.add(scope);
    logger.warn(
      { method: error.method, scope, code: error.feishuCode },
      `Feishu refused ${error.method}: the app lacks the scope ${scope} — ${scopeLine(scope)}. Grant it under 权限管理 (Permissions) in the developer console, then publish a new version.`,
    );
  };
}

/** The scope to name: the manifest's own among those the refusal lists, else the one the call is known by. */
export function missingScope(error: FeishuApiError): string {
  const listed = /\[([^\]]+)\]/.exec(error.message)?.[1]?.split(/,\s*/) ?? [];
  const ours = new Set(loadManifest().scopes.tenant.map((entry) => entry.name));
  return listed.find((scope) => ours.has(scope)) ?? SCOPE_OF_CALL[error.method] ?? listed[0] ?? "(unknown)";
}
