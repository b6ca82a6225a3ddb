import type { RunnableConfig } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { CANNOT_CHECK, runChecks } from "./checks.ts";

/**
 * `npm run doctor`'s checks when the bot starts in feishu mode, in the background, as warnings: a start is
 * never held up or refused by them. Skipped against a loopback FEISHU_DOMAIN (the emulator: its tests count
 * the calls it gets, and nothing there is a tenant's setting).
 */
export function startupChecks(config: RunnableConfig, logger: Logger): Promise<void> {
  const log = logger.child({ module: "doctor" });
  if (isLoopbackDomain(config.feishu.domain)) {
    log.debug("start-up checks skipped: FEISHU_DOMAIN is on loopback");
    return Promise.resolve();
  }
  return runChecks({
    appId: config.feishu.appId,
    appSecret: config.feishu.appSecret,
    domain: config.feishu.domain,
    transport: config.feishu.transport,
    ...(config.feishu.encryptKey ? { encryptKey: config.feishu.encryptKey } : {}),
    ...(config.publicUrlGiven ? { publicUrl: config.publicUrl } : {}),
  }).then(
    (checks) => {
      for (const check of checks)
        if (check.status !== "ok") log.warn({ check: check.name, status: check.status }, check.line);
      log.debug({ notChecked: CANNOT_CHECK }, "start-up checks done (npm run doctor for the full report)");
    },
    (error: unknown) => log.warn({ err: String(error) }, "start-up checks could not run"),
  );
}

function isLoopbackDomain(domain: string): boolean {
  if (!/^https?:\/\//.test(domain)) return false;
  const host = new URL(domain).hostname;
  return host === "localhost" || host === "[::1]" || host.startsWith("127.");
}
