import type { Strings } from "../strings/index.ts";

/**
 * `/login` in a chat with the bot: the way a Feishu user gets onto the session pages (DESIGN §7). A link on a
 * group card is the same for everyone, so it carries nobody's identity; the personal link comes in the private
 * chat only, where nobody else reads it. In a group the bot says where to ask instead: a link posted there
 * would let anyone in the group act as the sender. Pure but for the link it is given.
 */

const COMMANDS = new Set(["/login", "/登录", "登录"]);

export function isSignInCommand(text: string): boolean {
  return COMMANDS.has(text.trim().toLowerCase());
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The reply's text: the link on a line of its own (a URL glued to Chinese text does not link in Feishu). The
 * link is minted only for a private chat (it reads the sender's revocation generation from the store).
 */
export async function signInReply(
  chatType: "p2p" | "group",
  link: () => Promise<{ url: string; expiresAt: number }>,
  now: number,
  s: Strings,
): Promise<string> {
  if (chatType !== "p2p") return s.feishu.signInPrivateOnly;
  const { url, expiresAt } = await link();
  const days = Math.max(1, Math.floor((expiresAt - now) / DAY_MS));
  return `${s.feishu.signInLink(days)}\n${url}`;
}
