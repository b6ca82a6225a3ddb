import { loadConfig } from "../config.ts";
import { readConfigFile } from "../config-file.ts";
import { ConfigError } from "../errors.ts";
import { doctorTargets, failed, formatAppChecks, runAppChecks } from "../feishu/doctor/apps.ts";
import { withSetupCredentials } from "../feishu/setup/credentials-file.ts";

/** `npm run doctor`: the checks of doctor/checks.ts against every app the bot would start with. Exit 1 when any app fails. */

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
  // Every app of the config, each with its own credentials, domain and transport (issue 30).
  const results = await runAppChecks(doctorTargets(config));
  for (const line of formatAppChecks(results)) process.stdout.write(`${line}\n`);
  process.exit(results.some(failed) ? 1 : 0);
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}
