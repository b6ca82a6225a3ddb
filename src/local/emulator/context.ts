import { AppContexts, appIdentity, perApp } from "./apps.ts";
import { CardEntities } from "./cardkit.ts";
import { createClock } from "./clock.ts";
import type { DlpAudit } from "./dlp.ts";
import { FaultQueue } from "./faults.ts";
import { type Journal, openJournal } from "./journal.ts";
import { KeyedWindows, type SlidingWindow } from "./limits.ts";
import type { LongConnectionServer } from "./long-connection/server.ts";
import { Observer } from "./observer.ts";
import { MessageStore, type TokenStore, UpdateTokenStore, UuidCache } from "./state.ts";
import type { EmulatorClock, EmulatorOptions } from "./types.ts";

export interface EmulatorConfig {
  appId: string;
  appSecret: string;
  botOpenId: string;
  botName: string;
  tenantKey: string;
  clientLocale: string;
  userNames: Readonly<Record<string, string>>;
  encryptKey: string | undefined;
  verificationToken: string | undefined;
  perMessagePatchPerSecond: number;
  appCallsPerSecond: number;
  tokenTtlSeconds: number;
}

/** Everything a request handler or an event builder may read or change. */
export interface EmulatorContext {
  config: EmulatorConfig;
  clock: EmulatorClock;
  messages: MessageStore;
  tokens: TokenStore;
  updateTokens: UpdateTokenStore;
  uuids: UuidCache;
  appWindow: SlidingWindow;
  patchWindows: KeyedWindows;
  faults: FaultQueue;
  observer: Observer;
  /** Set with `stateFile`: closed when the emulator closes. */
  journal: Journal | undefined;
  /** The long-connection server (connections live in memory only). */
  longConnection: LongConnectionServer;
  /** The tenant's settings an admin can change while the app runs. */
  tenant: TenantSettings;
  /** CardKit card entities (cardkit.ts); an entity sent in a message updates it. */
  cardkit: CardEntities;
  /**
   * Every app of the tenant (apps.ts), this one among them: a call is served as the app whose token it carries.
   * `config`, `tokens`, `appWindow` and `longConnection` are this app's; everything else is the tenant's.
   */
  apps: AppContexts<EmulatorContext>;
}

export interface TenantSettings {
  /** The data-loss-prevention audit on send, reply and PATCH (dlp.ts); off when undefined. */
  dlpAudit: DlpAudit | undefined;
  /** The app's granted tenant scopes (scopes.ts); undefined: every scope is granted. */
  grantedScopes: ReadonlySet<string> | undefined;
}

const APP_ID = /^cli_[0-9a-fA-F]{16}$/;

export function resolveConfig(options: EmulatorOptions): EmulatorConfig {
  const config: EmulatorConfig = {
    appId: options.appId ?? "cli_0123456789abcdef",
    appSecret: options.appSecret ?? "emulator-secret",
    botOpenId: options.botOpenId ?? "ou_bot0000000000000000000000000000",
    botName: options.botName ?? "Progress Bot",
    tenantKey: options.tenantKey ?? "tenant_emulator",
    clientLocale: options.clientLocale ?? "zh_cn",
    userNames: options.userNames ?? {},
    encryptKey: options.encryptKey,
    verificationToken: options.verificationToken,
    perMessagePatchPerSecond: options.perMessagePatchPerSecond ?? 5,
    appCallsPerSecond: options.appCallsPerSecond ?? 50,
    tokenTtlSeconds: options.tokenTtlSeconds ?? 7200,
  };
  if (!APP_ID.test(config.appId))
    throw new Error(`appId "${config.appId}" must match ${APP_ID} (the SDK's WSClient refuses others)`);
  for (const key of ["perMessagePatchPerSecond", "appCallsPerSecond", "tokenTtlSeconds"] as const) {
    if (!(config[key] > 0)) throw new Error(`${key} must be positive`);
  }
  return config;
}

export function createContext(options: EmulatorOptions): EmulatorContext {
  const config = resolveConfig(options);
  const journal = options.stateFile === undefined ? undefined : openJournal(options.stateFile);
  const clock = createClock(options.now);
  const observer = new Observer(
    options.onListenerError ?? ((error) => console.error("emulator listener failed", error)),
  );
  const messages = new MessageStore(journal);
  for (const chatId of options.topicGroups ?? []) messages.chatModes.set(chatId, "topic");
  const cardkit = new CardEntities(messages, (messageId, via) => {
    const message = messages.get(messageId);
    if (message) observer.emit("message_patched", { message, via });
  });
  const apps = new AppContexts<EmulatorContext>();
  const first: EmulatorContext = {
    cardkit,
    config,
    clock,
    messages,
    ...perApp({ clock, observer }, config, options.longConnection),
    updateTokens: new UpdateTokenStore(),
    uuids: new UuidCache(journal),
    patchWindows: new KeyedWindows(config.perMessagePatchPerSecond),
    faults: new FaultQueue(),
    observer,
    journal,
    tenant: {
      dlpAudit: dlpAuditOf(options.dlpAudit),
      grantedScopes: options.grantedScopes ? new Set(options.grantedScopes) : undefined,
    },
    apps,
  };
  apps.add(first);
  // More apps of the same tenant: their own identity, tokens, rate window and long connections (apps.ts).
  for (const [i, app] of (options.otherApps ?? []).entries())
    apps.add({
      ...first,
      config: { ...config, ...appIdentity(app, i + 2) },
      ...perApp({ clock, observer }, config, options.longConnection),
    });
  return first;
}

/** `dlpAudit: true` is the audit with no keywords of the tenant's own. */
export function dlpAuditOf(setting: boolean | DlpAudit | undefined): DlpAudit | undefined {
  if (setting === undefined || setting === false) return undefined;
  return setting === true ? {} : setting;
}
