import { loadConfig } from "../config.ts";
import { readConfigFile } from "../config-file.ts";
import { ConfigError } from "../errors.ts";
import { formatChecks, runChecks } from "../feishu/doctor/checks.ts";
import { withSetupCredentials } from "../feishu/setup/credentials-file.ts";

/** `npm run doctor`: the checks of doctor/checks.ts against the app the bot would start with. Exit 1 on a failure. */

try {
  // As main.ts loads it: the config file under the environment, setup's credentials when neither names an app.
  const file = readConfigFile(process.env);
  const config = loadConfig(file?.apps ? process.env : withSetupCredentials(process.env), file);
  if (config.mode !== "feishu") {
    process.stdout.write(
      "No Feishu app configured (local mode): run npm run setup first, or set FEISHU_APP_ID.\n",
    );
    process.exit(1);
  }
  const checks = await runChecks({
    appId: config.feishu.appId,
    appSecret: config.feishu.appSecret,
    domain: config.feishu.domain,
    transport: config.feishu.transport,
    ...(config.feishu.encryptKey ? { encryptKey: config.feishu.encryptKey } : {}),
    ...(config.publicUrlGiven ? { publicUrl: config.publicUrl } : {}),
  });
  for (const line of formatChecks(checks)) process.stdout.write(`${line}\n`);
  // Several apps (issue 30): the checks cover the first; the others are named so nobody reads them as checked.
  const others = config.apps.slice(1).map((app) => app.appId);
  if (others.length > 0)
    process.stdout.write(
      `Checked the first app ${config.feishu.appId} only; not checked: ${others.join(", ")}\n`,
    );
  process.exit(checks.some((check) => check.status === "fail") ? 1 : 0);
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}
