import type { FeishuSettings, RunnableConfig } from "../../config.ts";
import { appWebhookPath, FEISHU_WEBHOOK_PATH } from "../webhook.ts";
import {
  type Check,
  type DoctorTarget,
  formatCannotCheck,
  formatCheckLines,
  formatChecks,
  runChecks,
} from "./checks.ts";

/**
 * The checks of checks.ts for every app the bot would start with (issue 30: a config file's `apps`), each with
 * its own credentials, domain and transport. One app is checked and reported exactly as before several existed.
 */

export interface AppChecks {
  appId: string;
  checks: Check[];
}

/** Where a refused app's credentials come from when there are several. */
const SEVERAL_APPS_SETTINGS =
  "its appSecret and domain in the config file's apps (FEISHU_APP_SECRET and FEISHU_DOMAIN for an app FEISHU_APP_ID names)";

/** The apps of a config, the first first (one app when the config has no `apps`). */
export function appsOf(config: RunnableConfig): FeishuSettings[] {
  return config.apps && config.apps.length > 0 ? config.apps : [config.feishu];
}

/**
 * Each app as doctor checks it. A single app's webhook is checked at `/feishu/events`, its one path; with
 * several, each app at its own `/feishu/<app id>/events`, the request URL its console is told to use.
 */
export function doctorTargets(config: RunnableConfig): DoctorTarget[] {
  const apps = appsOf(config);
  return apps.map((app) => ({
    appId: app.appId,
    appSecret: app.appSecret,
    domain: app.domain,
    transport: app.transport,
    ...(app.encryptKey ? { encryptKey: app.encryptKey } : {}),
    ...(config.publicUrlGiven ? { publicUrl: config.publicUrl } : {}),
    ...(apps.length > 1
      ? { webhookPath: appWebhookPath(app.appId), credentialSettings: SEVERAL_APPS_SETTINGS }
      : { webhookPath: FEISHU_WEBHOOK_PATH }),
  }));
}

/** Every target's checks, one app after the other (the report keeps the config's order). */
export async function runAppChecks(
  targets: DoctorTarget[],
  run: (target: DoctorTarget) => Promise<Check[]> = runChecks,
): Promise<AppChecks[]> {
  const results: AppChecks[] = [];
  for (const target of targets) results.push({ appId: target.appId, checks: await run(target) });
  return results;
}

export const failed = (result: AppChecks): boolean => result.checks.some((check) => check.status === "fail");

/**
 * The report. One app: its lines and what cannot be checked, as ever. Several: each app's lines under a heading
 * naming it, what cannot be checked once, and a last line naming the apps that failed, if any.
 */
export function formatAppChecks(results: AppChecks[]): string[] {
  const [only] = results;
  if (results.length === 1 && only) return formatChecks(only.checks);
  const lines: string[] = [];
  for (const result of results)
    lines.push(`App ${result.appId}:`, ...formatCheckLines(result.checks).map((line) => `  ${line}`));
  lines.push(...formatCannotCheck());
  const failing = results.filter(failed).map((result) => result.appId);
  lines.push(
    failing.length > 0
      ? `Failed: ${failing.join(", ")} (of ${results.length} apps)`
      : `All ${results.length} apps passed`,
  );
  return lines;
}
