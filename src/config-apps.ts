import { type AgentSettings, appAgentFrom } from "./config-agent.ts";
import type { Env } from "./config-env.ts";
import { type FileApp, resolveSecret, type SecretRef } from "./config-file.ts";

/**
 * The Feishu apps one process serves (issue 30), from the environment's single app (FEISHU_APP_ID …) and the
 * config file's `apps`. The environment's app comes first, as it always has: it keeps `POST /feishu/events`
 * and its sessions keep their ids. A file entry with the same app id is that app, its fields overridden by
 * whichever FEISHU_* variables the environment sets; every other entry follows in the file's order.
 */

export interface AppSettings {
  appId: string;
  appSecret: string;
  domain: string;
  transport: "ws" | "webhook";
  encryptKey?: string;
  verificationToken?: string;
  allow?: { users: string[]; chats: string[] };
  /** The app's own agent; absent, its runs get the environment's (AGENT and its variables). */
  agent?: AgentSettings;
}

export interface LoadedApps {
  apps: AppSettings[];
  /** Variables secrets were read from (`{"env": …}`), to be removed from the process after loading. */
  secretEnvNames: string[];
  problems: string[];
}

/** `raw` is the merged environment as text: whether a variable was set at all (a default is not "set"). */
export function loadApps(
  e: Env,
  raw: Record<string, string | undefined>,
  fileApps: FileApp[] | undefined,
): LoadedApps {
  const problems: string[] = [];
  const secretEnvNames: string[] = [];
  const apps: AppSettings[] = [];
  const fromFile = fileApps ?? [];
  const set = (name: string) => raw[name] !== undefined && raw[name]?.trim() !== "";
  const envAllow = allowFromEnv(e);

  if (e.FEISHU_APP_ID) {
    const same = fromFile.findIndex((app) => app.appId === e.FEISHU_APP_ID);
    const file = same >= 0 ? fromFile[same] : undefined;
    const where = same >= 0 ? `apps[${same}]` : "";
    const fileSecret = (ref: SecretRef | undefined, field: string) =>
      ref === undefined ? undefined : take(ref, `${where}.${field}`);
    const appSecret = e.FEISHU_APP_SECRET ?? fileSecret(file?.appSecret, "appSecret");
    if (!appSecret && !file) problems.push("  FEISHU_APP_SECRET: required when FEISHU_APP_ID is set");
    const app: AppSettings = {
      appId: e.FEISHU_APP_ID,
      appSecret: appSecret ?? "",
      domain: set("FEISHU_DOMAIN") ? e.FEISHU_DOMAIN : (file?.domain ?? e.FEISHU_DOMAIN),
      transport: set("FEISHU_TRANSPORT") ? e.FEISHU_TRANSPORT : (file?.transport ?? e.FEISHU_TRANSPORT),
    };
    const encryptKey = e.FEISHU_ENCRYPT_KEY ?? fileSecret(file?.encryptKey, "encryptKey");
    const verificationToken =
      e.FEISHU_VERIFICATION_TOKEN ?? fileSecret(file?.verificationToken, "verificationToken");
    if (encryptKey) app.encryptKey = encryptKey;
    if (verificationToken) app.verificationToken = verificationToken;
    const allow = envAllow ?? allowOf(file?.allow);
    if (allow) app.allow = allow;
    // AGENT and its variables are every app's default; an app's own `agent` is its own, whatever they say.
    if (file?.agent) agentOf(app, file.agent, `${where}.agent`);
    if (app.transport === "webhook" && !app.encryptKey)
      problems.push(
        "  FEISHU_ENCRYPT_KEY: required with FEISHU_TRANSPORT=webhook (bodies are decrypted and signed with it)",
      );
    apps.push(app);
  }
  for (const [i, file] of fromFile.entries()) {
    if (file.appId === e.FEISHU_APP_ID) continue;
    const appSecret = take(file.appSecret, `apps[${i}].appSecret`);
    const app: AppSettings = {
      appId: file.appId,
      appSecret: appSecret ?? "",
      domain: file.domain ?? e.FEISHU_DOMAIN,
      transport: file.transport,
    };
    const encryptKey = file.encryptKey && take(file.encryptKey, `apps[${i}].encryptKey`);
    const verificationToken =
      file.verificationToken && take(file.verificationToken, `apps[${i}].verificationToken`);
    if (encryptKey) app.encryptKey = encryptKey;
    if (verificationToken) app.verificationToken = verificationToken;
    // FEISHU_ALLOWED_* are the environment's app's; a file app has its own list or none.
    const allow = allowOf(file.allow);
    if (allow) app.allow = allow;
    if (file.agent) agentOf(app, file.agent, `apps[${i}].agent`);
    apps.push(app);
  }
  return { apps, secretEnvNames, problems };

  function agentOf(app: AppSettings, agent: NonNullable<FileApp["agent"]>, where: string): void {
    const own = appAgentFrom(agent, e, raw, where);
    problems.push(...own.problems);
    secretEnvNames.push(...own.secretEnvNames);
    if (own.settings) app.agent = own.settings;
  }

  function take(ref: SecretRef, field: string): string | undefined {
    const resolved = resolveSecret(ref, raw, field.replace(/^\./, ""));
    if ("problem" in resolved) {
      problems.push(resolved.problem);
      return undefined;
    }
    if (resolved.fromEnv) secretEnvNames.push(resolved.fromEnv);
    return resolved.value;
  }
}

function allowFromEnv(e: Env): AppSettings["allow"] {
  if (e.FEISHU_ALLOWED_USERS === undefined && e.FEISHU_ALLOWED_CHATS === undefined) return undefined;
  return { users: e.FEISHU_ALLOWED_USERS ?? [], chats: e.FEISHU_ALLOWED_CHATS ?? [] };
}

function allowOf(allow: FileApp["allow"]): AppSettings["allow"] {
  if (!allow) return undefined;
  return { users: allow.users ?? [], chats: allow.chats ?? [] };
}
