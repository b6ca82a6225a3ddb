import { SlidingWindow } from "./limits.ts";
import { LongConnectionServer } from "./long-connection/server.ts";
import type { LongConnectionOptions } from "./long-connection/types.ts";
import { TokenStore } from "./state.ts";
import type { EmulatorAppOptions } from "./types.ts";

/**
 * Several apps on one tenant (issue 30: one bot process serving several Feishu apps). On the platform each app
 * has its own credentials, its own tenant_access_token, its own rate budget (the limits are per app), its own
 * bot (open_id, name), its own event subscription and long connections; the chats and their messages are the
 * tenant's, and a message an app sends is that app's (its `sender.id` is the app id). The emulator keeps the
 * shared part once (messages, clock, observer, faults, CardKit entities) and the per-app part once per app:
 * every call is served as the app whose token (or credentials) it carries.
 */

/** The per-app half of a context: who the app is, and what the platform keeps for it alone. */
export interface AppIdentityConfig {
  appId: string;
  appSecret: string;
  botOpenId: string;
  botName: string;
  encryptKey: string | undefined;
  verificationToken: string | undefined;
}

export interface PerApp {
  tokens: TokenStore;
  appWindow: SlidingWindow;
  longConnection: LongConnectionServer;
}

/** Every app's context, the first first; contexts of one tenant share this list. */
export class AppContexts<C extends { config: AppIdentityConfig; tokens: TokenStore }> {
  readonly all: C[] = [];

  add(ctx: C): void {
    if (this.byId(ctx.config.appId)) throw new Error(`app ${ctx.config.appId} is already on this tenant`);
    this.all.push(ctx);
  }

  byId(appId: string): C | undefined {
    return this.all.find((ctx) => ctx.config.appId === appId);
  }

  /** The app a live tenant token was issued to (each app's tokens are its own). */
  byToken(token: string, now: number): C | undefined {
    return this.all.find((ctx) => ctx.tokens.isValid(token, now));
  }
}

const APP_ID = /^cli_[0-9a-fA-F]{16}$/;

export function appIdentity(app: EmulatorAppOptions, n: number): AppIdentityConfig {
  if (!APP_ID.test(app.appId))
    throw new Error(`appId "${app.appId}" must match ${APP_ID} (the SDK's WSClient refuses others)`);
  return {
    appId: app.appId,
    appSecret: app.appSecret ?? `${app.appId}-secret`,
    botOpenId: app.botOpenId ?? `ou_bot_${app.appId.slice(4)}`,
    botName: app.botName ?? `Progress Bot ${n}`,
    encryptKey: app.encryptKey,
    verificationToken: app.verificationToken,
  };
}

/** What the platform keeps for one app alone: its tokens, its rate window, its long connections. */
export function perApp(
  deps: {
    clock: ConstructorParameters<typeof LongConnectionServer>[0]["clock"];
    observer: ConstructorParameters<typeof LongConnectionServer>[0]["observer"];
  },
  limits: { tokenTtlSeconds: number; appCallsPerSecond: number },
  longConnection: LongConnectionOptions | undefined,
): PerApp {
  return {
    tokens: new TokenStore(limits.tokenTtlSeconds * 1000),
    appWindow: new SlidingWindow(limits.appCallsPerSecond),
    longConnection: new LongConnectionServer(deps, longConnection),
  };
}
