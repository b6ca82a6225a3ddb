import { describeSetupFailure, runSetup } from "../feishu/setup/setup.ts";

/**
 * `npm run setup [-- --lark] [--force] [--env-file .env] [--domain <base URL>]`: one scan creates the Feishu
 * (or Lark) app, and the bot's credentials land in DATA_DIR/feishu-app.env (setup/setup.ts).
 */

const args = process.argv.slice(2);
const optionValue = (flag: string) => {
  const at = args.indexOf(flag);
  return at >= 0 ? args[at + 1] : undefined;
};
const options = new Set(["--lark", "--force", "--env-file", "--domain", "--help"]);
const unknownFlags = args.filter((arg) => arg.startsWith("--") && !options.has(arg));
if (args.includes("--help") || unknownFlags.length > 0) {
  if (unknownFlags.length > 0) process.stderr.write(`Unknown option ${unknownFlags.join(", ")}\n`);
  process.stdout.write(
    "Usage: npm run setup [-- --lark] [--force] [--env-file <file>] [--domain <base URL>]\n" +
      "  --lark       create the app on Lark (larksuite.com) instead of Feishu\n" +
      "  --force      replace credentials setup wrote before\n" +
      "  --env-file   write to this file instead of DATA_DIR/feishu-app.env\n" +
      "  --domain     a base URL serving the accounts host and the Open API (the local emulator)\n",
  );
  process.exit(unknownFlags.length > 0 ? 2 : 0);
}

const controller = new AbortController();
process.once("SIGINT", () => controller.abort());
process.once("SIGTERM", () => controller.abort());

const baseUrl =
  optionValue("--domain") ??
  (/^https?:\/\//.test(process.env.FEISHU_DOMAIN ?? "") ? process.env.FEISHU_DOMAIN : undefined);
const envFile = optionValue("--env-file");
runSetup({
  dataDir: process.env.DATA_DIR?.trim() || "./data",
  lark: args.includes("--lark") || process.env.FEISHU_DOMAIN === "lark",
  force: args.includes("--force"),
  ...(baseUrl ? { baseUrl } : {}),
  ...(envFile ? { envFile } : {}),
  signal: controller.signal,
  out: (line) => process.stdout.write(`${line}\n`),
}).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${describeSetupFailure(error)}\n`);
    process.exit(controller.signal.aborted ? 130 : 1);
  },
);
