import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadManifest, registrationAddons, SCOPE_OF_CALL, scopeLine } from "../src/feishu/app-manifest.ts";

/**
 * feishu-app.json against the code: every Open API the bot calls (found in the source, not listed by hand
 * here) must be granted by a scope the manifest asks for, and every scope it asks for must be used by a call
 * or an event. The table below is this test's own reading of the Open API docs (each endpoint's 权限要求,
 * "any one of"); a new call fails here until someone looks its scope up and adds it.
 */

const root = path.resolve(import.meta.dirname, "..");

interface Api {
  path: string;
  /** The docs' 权限要求: any one of these grants the call; empty: none needed (bot capability only). */
  scopes: string[];
}

const APIS: Record<string, Api> = {
  "im.message.create": {
    path: "/open-apis/im/v1/messages",
    scopes: ["im:message", "im:message:send_as_bot", "im:message:send"],
  },
  "im.message.reply": {
    path: "/open-apis/im/v1/messages/:id/reply",
    scopes: ["im:message", "im:message:send_as_bot", "im:message:reply"],
  },
  "im.message.patch": {
    path: "/open-apis/im/v1/messages/:id",
    scopes: ["im:message", "im:message:send_as_bot", "im:message:update"],
  },
  "im.message.update": {
    path: "/open-apis/im/v1/messages/:id",
    scopes: ["im:message", "im:message:send_as_bot", "im:message:update"],
  },
  "im.message.delete": {
    path: "/open-apis/im/v1/messages/:id",
    scopes: ["im:message", "im:message:send_as_bot", "im:message:recall"],
  },
  "im.message.get": {
    path: "/open-apis/im/v1/messages/:id",
    scopes: ["im:message", "im:message:readonly", "im:message.history:readonly"],
  },
  "contact.user.get": {
    path: "/open-apis/contact/v3/users/:id",
    scopes: [
      "contact:user.base:readonly",
      "contact:contact.base:readonly",
      "contact:contact:readonly_as_app",
    ],
  },
  "cardkit.card.create": { path: "/open-apis/cardkit/v1/cards", scopes: ["cardkit:card:write"] },
  "cardkit.card.update": { path: "/open-apis/cardkit/v1/cards/:id", scopes: ["cardkit:card:write"] },
  "cardkit.card.settings": {
    path: "/open-apis/cardkit/v1/cards/:id/settings",
    scopes: ["cardkit:card:write"],
  },
  "bot.info": { path: "/open-apis/bot/v3/info", scopes: [] },
  "auth.tenant_access_token": { path: "/open-apis/auth/v3/tenant_access_token/internal", scopes: [] },
};

/** Events and what each needs to be delivered at all (both kinds of chat the bot answers in). */
const EVENTS: Record<string, string[]> = {
  "im.message.receive_v1": ["im:message.p2p_msg:readonly", "im:message.group_at_msg:readonly"],
};
const CALLBACKS = new Set(["card.action.trigger"]);

/** The bot's own source: not the emulator (it plays Feishu) nor the test doubles. */
function botSources(): { file: string; text: string }[] {
  return fs
    .readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !/^(local|testing)\//.test(file) && !file.includes("/public/"))
    .map((file) => ({ file, text: fs.readFileSync(path.join(root, "src", file), "utf8") }));
}

const sources = botSources();
const manifest = loadManifest(path.join(root, "feishu-app.json"));
const declared = new Set(manifest.scopes.tenant.map((entry) => entry.name));

/** `call("im.message.patch", …)` in the messenger, and any SDK client call such as `client.im.message.create(`. */
function calledApis(): Set<string> {
  const names = new Set<string>();
  for (const { text } of sources) {
    for (const match of text.matchAll(/\bcall\(\s*"([a-z]+\.[a-z_.]+)"/g)) names.add(match[1] ?? "");
    for (const match of text.matchAll(/\bclient\.(im|contact|cardkit|bot|auth)\.(?:v\d\.)?(\w+)\.(\w+)\(/g))
      names.add(`${match[1]}.${match[2]}.${match[3]}`);
  }
  return names;
}

/** Every `/open-apis/…` literal, `${…}` made `:id`. */
function calledPaths(): { file: string; path: string }[] {
  return sources.flatMap(({ file, text }) =>
    [...text.matchAll(/["`](\/open-apis\/[^"`?]+)["`?]/g)].map((match) => ({
      file,
      path: (match[1] ?? "").replace(/\$\{[^}]+\}/g, ":id"),
    })),
  );
}

function handledNames(pattern: RegExp): Set<string> {
  const found = new Set<string>();
  for (const { file, text } of sources)
    if (/^feishu\/(long-connection|webhook)\.ts$/.test(file))
      for (const match of text.matchAll(pattern)) found.add(match[1] ?? "");
  return found;
}

describe("feishu-app.json", () => {
  const apis = calledApis();

  it("finds the code's calls (the checks below would otherwise prove nothing)", () => {
    expect(apis.size).toBeGreaterThanOrEqual(7);
    expect(calledPaths().length).toBeGreaterThanOrEqual(7);
  });

  it("knows every Open API the code calls, by name and by path", () => {
    expect([...apis].filter((name) => !(name in APIS))).toEqual([]);
    const known = new Set(Object.values(APIS).map((api) => api.path));
    expect(calledPaths().filter((call) => !known.has(call.path))).toEqual([]);
  });

  it("asks for a scope that grants each call the code makes", () => {
    const ungranted = [...apis].filter((name) => {
      const scopes = APIS[name]?.scopes ?? [];
      return scopes.length > 0 && !scopes.some((scope) => declared.has(scope));
    });
    expect(ungranted).toEqual([]);
  });

  it("asks for what each handled event needs, and handles exactly the events and callbacks it lists", () => {
    const events = handledNames(/"([a-z]+\.[a-z_.]+_v\d+)"/g);
    const callbacks = handledNames(/"(card\.action\.trigger)"/g);
    expect(manifest.events.map((entry) => entry.name).sort()).toEqual([...events].sort());
    expect(manifest.callbacks.map((entry) => entry.name).sort()).toEqual([...callbacks].sort());
    for (const name of callbacks) expect(CALLBACKS.has(name)).toBe(true);
    for (const name of events)
      for (const scope of EVENTS[name] ?? ["(unknown event)"]) expect(declared).toContain(scope);
  });

  it("lists no scope that nothing uses", () => {
    const used = new Set([
      ...[...apis].flatMap((name) => APIS[name]?.scopes ?? []),
      ...manifest.events.flatMap((entry) => EVENTS[entry.name] ?? []),
    ]);
    expect([...declared].filter((scope) => !used.has(scope))).toEqual([]);
    expect(manifest.scopes.user).toEqual([]);
  });

  it("names, for a refused call, a scope the manifest asks for and the docs accept", () => {
    for (const name of apis) {
      const scopes = APIS[name]?.scopes ?? [];
      if (scopes.length === 0) continue;
      const scope = SCOPE_OF_CALL[name];
      expect(scope, name).toBeDefined();
      expect(scopes).toContain(scope);
      expect(declared).toContain(scope);
      expect(scopeLine(scope ?? "", manifest)).toContain(`"${scope}"`);
    }
  });

  it("says why for every line, and hands registerApp the same lists", () => {
    const addons = registrationAddons(manifest);
    expect(addons.scopes.tenant).toEqual([...declared]);
    expect(addons.events.items.tenant).toEqual(["im.message.receive_v1"]);
    expect(addons.callbacks.items).toEqual(["card.action.trigger"]);
    for (const entry of [...manifest.scopes.tenant, ...manifest.events, ...manifest.callbacks])
      expect(entry.why.length, entry.name).toBeGreaterThan(20);
  });
});
