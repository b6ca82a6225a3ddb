import { loadConfig } from "../config.ts";
import { ConfigError } from "../errors.ts";
import { formatChecks, runChecks } from "../feishu/doctor/checks.ts";
import { withSetupCredentials } from "../feishu/setup/credentials-file.ts";

/** `npm run doctor`: the checks of doctor/checks.ts against the app the bot would start with. Exit 1 on a failure. */

try {
  const config = loadConfig(withSetupCredentials(process.env));
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
  process.exit(checks.some((check) => check.status === "fail") ? 1 : 0);
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}
