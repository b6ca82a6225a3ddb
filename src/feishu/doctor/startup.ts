import type { RunnableConfig } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { doctorTargets, runAppChecks } from "./apps.ts";
import { CANNOT_CHECK, type Check, type DoctorTarget, runChecks } from "./checks.ts";

/**
 * `npm run doctor`'s checks of every app when the bot starts in feishu mode, in the background, as warnings: a
 * start is never held up or refused by them. Skipped for an app on a loopback domain (the emulator: its tests
 * count the calls it gets, and nothing there is a tenant's setting).
 */
export function startupChecks(
  config: RunnableConfig,
  logger: Logger,
  run: (target: DoctorTarget) => Promise<Check[]> = runChecks,
): Promise<void> {
  const log = logger.child({ module: "doctor" });
  const targets = doctorTargets(config);
  // Several apps: each warning names its app; one app's lines are as they were before several existed.
  const several = targets.length > 1;
  const checked = targets.filter((target) => {
    if (!isLoopbackDomain(target.domain)) return true;
    log.debug(several ? { app: target.appId } : {}, "start-up checks skipped: FEISHU_DOMAIN is on loopback");
    return false;
  });
  if (checked.length === 0) return Promise.resolve();
  return runAppChecks(checked, run).then(
    (results) => {
      for (const { appId, checks } of results)
        for (const check of checks)
          if (check.status !== "ok")
            log.warn(
              { ...(several ? { app: appId } : {}), check: check.name, status: check.status },
              check.line,
            );
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
