import path from "node:path";
import type { Config, RunnableConfig } from "../config.ts";
import { LOCAL_USERS } from "./console/users.ts";
import { type Emulator, startEmulator } from "./emulator/index.ts";

/**
 * Local mode (no FEISHU_APP_ID): the Feishu side is the emulator on loopback, and the bot talks to it exactly
 * as it talks to Feishu — the SDK over HTTP for the Open API, and for events and card callbacks the long
 * connection (the SDK's WSClient against the emulator's pbbp2 server), like production. FEISHU_TRANSPORT=webhook
 * switches to signed and encrypted webhooks instead. Only the base URL differs. The webhook key is the
 * DATA_DIR's own (auth/secret.ts).
 *
 * The emulator keeps its chats and cards in `DATA_DIR/emulator.sqlite`, so a restart behaves as on Feishu:
 * the bot resumes its runs from its own database and finds their cards where it left them.
 */
export const EMULATOR_STATE_FILE = "emulator.sqlite";

export async function startLocalFeishu(
  config: Config & { mode: "local" },
  encryptKey: string,
): Promise<{ emulator: Emulator; config: RunnableConfig }> {
  const webhook = config.feishu.transport === "webhook";
  const emulator = await startEmulator({
    encryptKey,
    stateFile: path.join(config.dataDir, EMULATOR_STATE_FILE),
    // The console's people read the bot's language (BOT_LOCALE=en_us: English toasts, like a Lark tenant).
    clientLocale: config.locale,
    // EMULATOR_DLP_AUDIT=on: the tenant's data-loss-prevention audit, to see how refused cards degrade.
    dlpAudit: config.feishu.dlpAudit,
    // The tenant's directory (获取单个用户信息): toasts name who may answer (仅 @Bob 可以回答此问题).
    userNames: Object.fromEntries(LOCAL_USERS.map((user) => [user.openId, user.name])),
  });
  // The webhook subscription needs the bot's port, known only after listen: main.ts subscribes it then.
  if (!webhook) emulator.subscribe({ mode: "long_connection" });
  return {
    emulator,
    config: {
      ...config,
      feishu: {
        ...config.feishu,
        appId: emulator.appId,
        appSecret: emulator.appSecret,
        domain: emulator.url,
        transport: webhook ? "webhook" : "ws",
        encryptKey,
      },
    },
  };
}
