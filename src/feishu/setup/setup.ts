import fs from "node:fs";
import path from "node:path";
import * as lark from "@larksuiteoapi/node-sdk";
import QRCode from "qrcode";
import { loadManifest, registrationAddons } from "../app-manifest.ts";
import { type Brand, type Hosts, hostsFor, manualSteps } from "./brands.ts";
import {
  credentialsPath,
  newAuthSecret,
  readCredentialsFile,
  writeEnvFileAtomic,
} from "./credentials-file.ts";

/**
 * `npm run setup`: one scan creates the Feishu app with the manifest's scopes, events and card callback
 * (`registerApp()`, an RFC 8628 device flow), the returned App ID and Secret are checked with a token call,
 * and only then written, with a new AUTH_SECRET, in one rename (credentials-file.ts). Every way it can end
 * badly is one line and leaves what was there before.
 */

export interface SetupOptions {
  dataDir: string;
  /** Write here instead of DATA_DIR/feishu-app.env (a `.env` the operator names). */
  envFile?: string;
  lark: boolean;
  /** A base URL (the emulator, a private deployment) for the accounts host and the Open API alike. */
  baseUrl?: string;
  /** Replace credentials that are already there. */
  force: boolean;
  signal?: AbortSignal;
  out: (line: string) => void;
}

export class SetupError extends Error {
  override name = "SetupError";
}

/** One line per way the flow fails; the SDK rejects with `{code, description}`. */
export function describeSetupFailure(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  const detail = (error as { description?: unknown })?.description;
  switch (code) {
    case "access_denied":
      return "The scan was declined in the Feishu app (access_denied): nothing written. Run npm run setup again to retry.";
    case "expired_token":
      return "The QR code expired before anyone confirmed it (expired_token): nothing written. Run npm run setup again for a new one.";
    case "authorization_pending":
      return "The scan was never confirmed (authorization_pending): nothing written.";
    case "slow_down":
      return "The platform kept asking to poll more slowly (slow_down): nothing written. Try again in a minute.";
    case "abort":
      return "Setup interrupted: nothing written.";
    default:
      if (error instanceof SetupError) return error.message;
      if (typeof code === "string")
        return `Registration failed (${code}${typeof detail === "string" ? `: ${detail}` : ""}): nothing written.`;
      return `Registration failed (${error instanceof Error ? error.message : String(error)}): nothing written.`;
  }
}

export async function runSetup(
  options: SetupOptions,
): Promise<{ appId: string; file: string; brand: Brand }> {
  const file = options.envFile ? path.resolve(options.envFile) : credentialsPath(options.dataDir);
  const existing = readCredentialsFile(file);
  if (existing?.FEISHU_APP_ID && !options.force)
    throw new SetupError(
      `${file} already holds app ${existing.FEISHU_APP_ID}: nothing changed. Run npm run setup -- --force to create another app and replace it.`,
    );
  const asked: Brand = options.lark ? "lark" : "feishu";
  const hosts = hostsFor(asked, options.baseUrl);
  const manifest = loadManifest();
  const qrFile = path.join(options.dataDir, "setup-qr.png");
  const undoRewrite = hosts.plainHttp ? rewriteToPlainHttp(hosts.plainHttp) : () => {};
  let pendingSaid = false;
  try {
    const result = await lark.registerApp({
      domain: hosts.accounts,
      larkDomain: hosts.larkAccounts,
      source: "feishu-progress-bot",
      createOnly: true,
      appPreset: { name: manifest.name, desc: manifest.description },
      addons: registrationAddons(manifest),
      ...(options.signal ? { signal: options.signal } : {}),
      onQRCodeReady: (info) => {
        fs.mkdirSync(options.dataDir, { recursive: true });
        void QRCode.toFile(qrFile, info.url).catch(() => undefined);
        void QRCode.toString(info.url, { type: "terminal", small: true }).then((art) => {
          options.out(art);
          options.out(
            `Scan this with the ${asked === "lark" ? "Lark" : "Feishu"} app (also saved as ${qrFile}),`,
          );
          options.out(`or open ${info.url}`);
          options.out(`The code is valid for ${Math.round(info.expireIn / 60)} minutes.`);
        });
      },
      onStatusChange: (info) => {
        if (info.status === "polling" && !pendingSaid) {
          pendingSaid = true;
          options.out("Waiting for the scan to be confirmed (authorization_pending)…");
        } else if (info.status === "slow_down") {
          options.out(
            `The platform asked to poll more slowly (slow_down): next check in ${info.interval ?? "?"} s.`,
          );
        } else if (info.status === "domain_switched") {
          options.out("The app belongs to a Lark tenant: continuing on Lark's accounts host.");
        }
      },
    });
    const brand: Brand = result.user_info?.tenant_brand ?? asked;
    if (brand !== asked)
      options.out(
        `The app is on ${brand === "lark" ? "Lark" : "Feishu"}, not ${asked === "lark" ? "Lark" : "Feishu"}: it is saved for ${brand}.`,
      );
    const saved = options.baseUrl ? hosts : hostsFor(brand);
    await validate(saved, result.client_id, result.client_secret);
    // A secret the file already has is kept: sign-in links and tokens made with it stay valid.
    const keptSecret = existing?.AUTH_SECRET;
    writeEnvFileAtomic(
      file,
      {
        FEISHU_APP_ID: result.client_id,
        FEISHU_APP_SECRET: result.client_secret,
        FEISHU_DOMAIN: saved.domain,
        AUTH_SECRET: keptSecret || newAuthSecret(),
      },
      `Written by npm run setup on ${new Date().toISOString()}; the bot reads it when FEISHU_APP_ID is unset.`,
    );
    options.out(
      `App ${result.client_id} created; its credentials and ${keptSecret ? "the AUTH_SECRET it had" : "a new AUTH_SECRET"} are in ${file} (mode 0600).`,
    );
    options.out("What the scan cannot do, in the developer console:");
    manualSteps(brand, result.client_id, saved).forEach((step, index) => {
      options.out(`  ${index + 1}. ${step}`);
    });
    options.out(
      "Then start the bot (npm run start:prod after npm run build, or npm start) and check it with npm run doctor.",
    );
    return { appId: result.client_id, file, brand };
  } finally {
    undoRewrite();
    fs.rmSync(qrFile, { force: true });
  }
}

/** A token call with what the scan returned: only credentials the Open API accepts are written. */
async function validate(hosts: Hosts, appId: string, appSecret: string): Promise<void> {
  let body: { code?: unknown; msg?: unknown; tenant_access_token?: unknown };
  try {
    const response = await fetch(`${hosts.openApi}/open-apis/auth/v3/tenant_access_token/internal`, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ app_id: appId, app_secret: appSecret }),
      signal: AbortSignal.timeout(10_000),
    });
    body = (await response.json()) as typeof body;
  } catch (error) {
    throw new SetupError(
      `Could not check the new credentials at ${hosts.openApi} (${error instanceof Error ? error.message : String(error)}): nothing written.`,
    );
  }
  if (body.code !== 0 || typeof body.tenant_access_token !== "string")
    throw new SetupError(
      `${hosts.openApi} refused the new credentials of ${appId} (code ${String(body.code)}: ${String(body.msg)}): nothing written. Wrong brand? Try ${hosts.domain === "lark" ? "without" : "with"} --lark.`,
    );
}

/** registerApp() always speaks https; the emulator on loopback speaks http. Only that one host is rewritten. */
function rewriteToPlainHttp(host: string): () => void {
  const instance = lark.defaultHttpInstance as unknown as {
    interceptors: {
      request: {
        use: (f: (config: { url?: string }) => { url?: string }) => number;
        eject: (id: number) => void;
      };
    };
  };
  const origin = `https://${host.split("/")[0]}`;
  const id = instance.interceptors.request.use((config) => {
    if (config.url?.startsWith(`${origin}/`)) config.url = `http://${config.url.slice("https://".length)}`;
    return config;
  });
  return () => instance.interceptors.request.eject(id);
}
