/**
 * Where each brand's accounts host (the one-scan registration), Open API and developer console live; a base
 * URL such as http://127.0.0.1:9999 (the emulator, a private deployment) serves all three.
 */

export type Brand = "feishu" | "lark";

export interface Hosts {
  /** What FEISHU_DOMAIN is written as: `feishu`, `lark` or the base URL. */
  domain: string;
  /** Host (and path) `registerApp()` puts behind `https://`: its `domain` / `larkDomain`. */
  accounts: string;
  larkAccounts: string;
  /** The Open API's base, for the token call that validates what the scan returned. */
  openApi: string;
  /** The developer console's page of an app. */
  console: (appId: string) => string;
  /** A base URL given over plain http: registerApp's `https://` is rewritten to it (setup.ts). */
  plainHttp?: string;
}

export function hostsFor(brand: Brand, baseUrl?: string): Hosts {
  if (baseUrl) {
    const url = new URL(baseUrl);
    const host = `${url.host}${url.pathname.replace(/\/+$/, "")}`;
    return {
      domain: `${url.protocol}//${host}`,
      accounts: host,
      larkAccounts: `${host}/lark`,
      openApi: `${url.protocol}//${host}`,
      console: (appId) => `${url.protocol}//${host}/app/${appId}`,
      ...(url.protocol === "http:" ? { plainHttp: host } : {}),
    };
  }
  return brand === "lark"
    ? {
        domain: "lark",
        accounts: "accounts.larksuite.com",
        larkAccounts: "accounts.larksuite.com",
        openApi: "https://open.larksuite.com",
        console: (appId) => `https://open.larksuite.com/app/${appId}`,
      }
    : {
        domain: "feishu",
        accounts: "accounts.feishu.cn",
        larkAccounts: "accounts.larksuite.com",
        openApi: "https://open.feishu.cn",
        console: (appId) => `https://open.feishu.cn/app/${appId}`,
      };
}

/** What the scan cannot do, each with where in the developer console to do it. */
export function manualSteps(brand: Brand, appId: string, hosts: Hosts): string[] {
  const page = hosts.console(appId);
  if (brand === "lark")
    return [
      `Events & Callbacks → Event Configuration: choose "Receive events through persistent connection" (start the bot first: the console checks it is connected) — ${page}/event`,
      `Events & Callbacks → Callback Configuration: the same persistent connection for card.action.trigger — ${page}/event`,
      `Version Management & Release: create a version, set its availability (who may use the bot), publish it — ${page}/version`,
      "Set PUBLIC_URL to where people reach this service, so cards carry their session-page link (docs/deploy.md).",
    ];
  return [
    `事件与回调 → 事件配置：订阅方式选「使用长连接接收事件」（先启动机器人，后台会检查连接）— ${page}/event`,
    `事件与回调 → 回调配置：同样选「使用长连接接收回调」，接收 card.action.trigger — ${page}/event`,
    `版本管理与发布：创建版本，设置可用范围（谁能使用机器人），申请发布 — ${page}/version`,
    "Set PUBLIC_URL to where people reach this service, so cards carry their session-page link (docs/deploy.md).",
  ];
}
