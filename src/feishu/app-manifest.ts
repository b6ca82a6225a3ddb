import fs from "node:fs";
import path from "node:path";
import { z } from "zod";

/**
 * `feishu-app.json`: what the bot needs from the platform (scopes, events, the card callback, the bot
 * capability), each with why. Setup hands it to `registerApp()`, the doctor and a refused call name its
 * lines, and test/feishu-app-manifest.test.ts keeps it and the code's Open API calls in step.
 */

const item = z.object({ name: z.string().min(1), why: z.string().min(1) });
const manifestSchema = z.object({
  name: z.string().min(1),
  description: z.string().min(1),
  bot: z.object({ enabled: z.literal(true), why: z.string().min(1) }),
  scopes: z.object({ tenant: z.array(item), user: z.array(item) }),
  events: z.array(item),
  callbacks: z.array(item),
});

export type AppManifest = z.infer<typeof manifestSchema>;

export const MANIFEST_FILE = "feishu-app.json";

/**
 * The scope each Open API call of ours is granted by (the one the manifest asks for; the docs accept others
 * too). A refused call names it; the manifest test checks this table against the docs' lists.
 */
export const SCOPE_OF_CALL: Readonly<Record<string, string>> = {
  "im.message.create": "im:message:send_as_bot",
  "im.message.reply": "im:message:send_as_bot",
  "im.message.patch": "im:message:send_as_bot",
  "im.message.update": "im:message:send_as_bot",
  "im.message.delete": "im:message:send_as_bot",
  "im.message.get": "im:message:readonly",
  "contact.user.get": "contact:user.base:readonly",
  "cardkit.card.create": "cardkit:card:write",
  "cardkit.card.update": "cardkit:card:write",
  "cardkit.card.settings": "cardkit:card:write",
};

/** Where the manifest lives: the package root, found upward from this file (src/feishu or dist/feishu). */
export function manifestPath(from: string = import.meta.dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, MANIFEST_FILE);
    if (fs.existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`${MANIFEST_FILE} not found above ${from}`);
  }
}

let loaded: AppManifest | undefined;

export function loadManifest(file?: string): AppManifest {
  if (file === undefined && loaded) return loaded;
  const parsed = manifestSchema.parse(JSON.parse(fs.readFileSync(file ?? manifestPath(), "utf8")));
  if (file === undefined) loaded = parsed;
  return parsed;
}

/** The manifest's line for a scope, for messages: `im:message:send_as_bot — Sends, replies to…`. */
export function scopeLine(scope: string, manifest: AppManifest = loadManifest()): string {
  const found = [...manifest.scopes.tenant, ...manifest.scopes.user].find((entry) => entry.name === scope);
  return found ? `${MANIFEST_FILE}: "${found.name}" (${found.why})` : `${MANIFEST_FILE} does not list it`;
}

/** What `registerApp()` pre-fills on the confirm page: the manifest's scopes, events and callbacks. */
export function registrationAddons(manifest: AppManifest = loadManifest()) {
  return {
    scopes: {
      tenant: manifest.scopes.tenant.map((entry) => entry.name),
      user: manifest.scopes.user.map((entry) => entry.name),
    },
    events: { items: { tenant: manifest.events.map((entry) => entry.name) } },
    callbacks: { items: manifest.callbacks.map((entry) => entry.name) },
  };
}
