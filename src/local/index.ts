import type { Config } from "../config.ts";
import { type Emulator, startEmulator } from "./emulator/index.ts";

/**
 * Local mode (no FEISHU_APP_ID): the Feishu side is the emulator on loopback, and the bot talks to it exactly
 * as it talks to Feishu — the SDK over HTTP for the Open API, signed and encrypted webhooks for events and
 * card callbacks. Only the base URL differs. The webhook key is the DATA_DIR's own (auth/secret.ts).
 */
export async function startLocalFeishu(
  config: Config,
  encryptKey: string,
): Promise<{ emulator: Emulator; config: Config }> {
  const emulator = await startEmulator({ encryptKey });
  return {
    emulator,
    config: {
      ...config,
      feishu: {
        ...config.feishu,
        appId: emulator.appId,
        appSecret: emulator.appSecret,
        domain: emulator.url,
        transport: "webhook",
        encryptKey,
      },
    },
  };
}
