import { randomBytes } from "node:crypto";
import express, { type Router } from "express";
import type { EmulatorClock, RegistrationOptions } from "./types.ts";

/**
 * The platform's side of one-scan app creation (`registerApp()` in the SDK, an RFC 8628 device flow on
 * `POST /oauth/v1/app/registration`, form-encoded): `begin` hands out a device code and the QR's URL, `poll`
 * answers `authorization_pending` until the person confirms in the Feishu app, then the App ID and Secret.
 * Errors come with HTTP 400 as the RFC says: `slow_down` for polls closer than the interval,
 * `access_denied` once declined, `expired_token` past the code's life. Feishu's accounts host answers at
 * `/oauth/…`, Lark's at `/lark/oauth/…`: a Lark tenant's scan polled on Feishu's host says
 * `tenant_brand: "lark"` and nothing else, so the client switches hosts (the SDK does, once).
 *
 * One emulated tenant has one app: confirming "creates" it, i.e. hands out the emulator's own credentials, so
 * the bot set up from them then talks to this emulator like to a new app.
 */

export const REGISTRATION_PATH = "/oauth/v1/app/registration";
export const LARK_REGISTRATION_PATH = `/lark${REGISTRATION_PATH}`;

type Brand = "feishu" | "lark";

interface Pending {
  deviceCode: string;
  userCode: string;
  /** The host begin was called on. */
  brand: Brand;
  expiresAt: number;
  gapMs: number;
  lastPollAt: number | undefined;
  outcome: "pending" | "approved" | "denied";
  /** The query of the QR's URL as the client built it (addons, preset, createOnly…). */
  scanned?: URLSearchParams;
}

export interface RegistrationView {
  userCode: string;
  brand: Brand;
  outcome: Pending["outcome"];
  polls: number;
}

export interface RegistrationControl {
  /** The person scans the QR `url` (the client's `verification_uri_complete`) and confirms or declines it. */
  confirm(url: string): void;
  decline(url: string): void;
  /** Registrations begun so far, oldest first. */
  list(): RegistrationView[];
  /** What the client put on the QR's URL, for the registration `url` belongs to (addons, name…). */
  scannedQuery(url: string): URLSearchParams | undefined;
}

export class Registrations implements RegistrationControl {
  readonly #byDevice = new Map<string, Pending & { polls: number }>();
  readonly #options: Required<Pick<RegistrationOptions, "intervalS" | "expiresInS">> & {
    minPollGapMs?: number;
  };
  readonly #deps: {
    clock: EmulatorClock;
    brand: Brand;
    credentials: () => { appId: string; appSecret: string };
  };
  readonly #openId: string;

  constructor(
    options: RegistrationOptions | undefined,
    deps: { clock: EmulatorClock; brand: Brand; credentials: () => { appId: string; appSecret: string } },
    openId = "ou_registrant00000000000000000000",
  ) {
    this.#options = {
      intervalS: options?.intervalS ?? 5,
      expiresInS: options?.expiresInS ?? 600,
      ...(options?.minPollGapMs !== undefined ? { minPollGapMs: options.minPollGapMs } : {}),
    };
    this.#deps = deps;
    this.#openId = openId;
  }

  begin(brand: Brand, base: string): Record<string, unknown> {
    const deviceCode = `dc_${randomBytes(12).toString("hex")}`;
    const userCode = randomBytes(4).toString("hex").toUpperCase();
    const now = this.#deps.clock.now();
    this.#byDevice.set(deviceCode, {
      deviceCode,
      userCode,
      brand,
      expiresAt: now + this.#options.expiresInS * 1000,
      gapMs: this.#options.minPollGapMs ?? this.#options.intervalS * 1000,
      lastPollAt: undefined,
      outcome: "pending",
      polls: 0,
    });
    const verify = `${base}${brand === "lark" ? "/lark" : ""}/oauth/v1/app/registration/verify`;
    return {
      device_code: deviceCode,
      user_code: userCode,
      verification_uri: verify,
      verification_uri_complete: `${verify}?user_code=${userCode}`,
      expires_in: this.#options.expiresInS,
      interval: this.#options.intervalS,
    };
  }

  /** `[status, body]` for one poll on `brand`'s host. */
  poll(brand: Brand, deviceCode: string): [number, Record<string, unknown>] {
    const entry = this.#byDevice.get(deviceCode);
    if (!entry) return [400, { error: "invalid_grant", error_description: "unknown device_code" }];
    entry.polls += 1;
    const now = this.#deps.clock.now();
    if (now >= entry.expiresAt)
      return [400, { error: "expired_token", error_description: "device code expired" }];
    if (entry.outcome === "denied")
      return [400, { error: "access_denied", error_description: "the user declined the authorization" }];
    const tooSoon = entry.lastPollAt !== undefined && now - entry.lastPollAt < entry.gapMs;
    entry.lastPollAt = now;
    if (tooSoon) {
      entry.gapMs += 5000;
      return [400, { error: "slow_down", error_description: "polling too frequently" }];
    }
    if (entry.outcome === "pending")
      return [400, { error: "authorization_pending", error_description: "waiting for the user" }];
    const tenantBrand = this.#deps.brand;
    // Confirmed by a Lark tenant, asked on Feishu's host: say the brand only, the client asks Lark's host.
    if (tenantBrand === "lark" && brand === "feishu")
      return [200, { user_info: { open_id: this.#openId, tenant_brand: "lark" } }];
    const { appId, appSecret } = this.#deps.credentials();
    return [
      200,
      {
        client_id: appId,
        client_secret: appSecret,
        user_info: { open_id: this.#openId, tenant_brand: tenantBrand },
      },
    ];
  }

  #byUrl(url: string): (Pending & { polls: number }) | undefined {
    const userCode = new URL(url).searchParams.get("user_code");
    return [...this.#byDevice.values()].find((entry) => entry.userCode === userCode);
  }

  #scan(url: string): Pending {
    const entry = this.#byUrl(url);
    if (!entry) throw new Error(`no registration has the user code of ${url}`);
    entry.scanned = new URL(url).searchParams;
    return entry;
  }

  confirm(url: string): void {
    this.#scan(url).outcome = "approved";
  }

  decline(url: string): void {
    this.#scan(url).outcome = "denied";
  }

  list(): RegistrationView[] {
    return [...this.#byDevice.values()].map((entry) => ({
      userCode: entry.userCode,
      brand: entry.brand,
      outcome: entry.outcome,
      polls: entry.polls,
    }));
  }

  scannedQuery(url: string): URLSearchParams | undefined {
    return this.#byUrl(url)?.scanned;
  }
}

/** The accounts hosts' endpoint, before any Open API middleware (no token; form-encoded bodies). */
export function mountRegistrationRoutes(
  router: Router,
  registrations: Registrations,
  baseUrl: () => string,
): void {
  const form = express.urlencoded({ extended: false, limit: "16kb" });
  for (const [path, brand] of [
    [REGISTRATION_PATH, "feishu"],
    [LARK_REGISTRATION_PATH, "lark"],
  ] as const) {
    router.post(path, form, (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const action = typeof body.action === "string" ? body.action : "";
      if (action === "begin") {
        res.status(200).json(registrations.begin(brand, baseUrl()));
        return;
      }
      if (action === "poll" && typeof body.device_code === "string") {
        const [status, answer] = registrations.poll(brand, body.device_code);
        res.status(status).json(answer);
        return;
      }
      res.status(400).json({ error: "invalid_request", error_description: "action must be begin or poll" });
    });
  }
}
