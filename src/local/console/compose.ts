import type { LocalUser } from "./users.ts";

/**
 * Turns what someone typed in the console into a Feishu text message with mentions, the way the Feishu
 * client does: each mention becomes an `@_user_N` placeholder in the text plus an entry in `mentions`
 * (the bot's first, as the emulator numbers them). Pure.
 *
 * The bot is mentioned by `@bot`, `@机器人` or `@<bot name>` anywhere, or by any text that starts with `@`
 * (a lone leading `@` is dropped). `@Alice`, `@Bob`, `@Carol` mention those users.
 */

export interface MentionRef {
  key: string;
  openId: string;
  name: string;
}

export interface ComposedText {
  /** The text with placeholders where the mentions were typed. */
  text: string;
  mentionBot: boolean;
  /** Mentioned users (not the bot), in placeholder order. */
  users: LocalUser[];
  /** Every placeholder and whom it stands for, for display. */
  keys: MentionRef[];
}

/** Marks where the first bot mention was typed (a private-use character, removed from the input first). */
const SLOT = "\uE000";
/** A mention starts after anything but a word character, `.` or `@` (so `me@bot.example` is no mention)… */
const START = "(^|[^A-Za-z0-9_.@])";
/** …and ends before anything but an ASCII word character (`@机器人帮我` works, `@botany` does not). */
const END = "(?![A-Za-z0-9_])";
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export function composeText(
  raw: string,
  options: { bot: { openId: string; name: string }; users: readonly LocalUser[] },
): ComposedText {
  const botNames = ["bot", "机器人", options.bot.name].map(escapeRegExp).join("|");
  const botToken = new RegExp(`${START}@(?:${botNames})${END}`, "giu");
  const userNames = options.users.map((user) => escapeRegExp(user.name)).join("|");
  const userToken = userNames ? new RegExp(`${START}@(${userNames})${END}`, "giu") : undefined;

  let text = raw.replaceAll(SLOT, "").trim();
  let botTyped = false;
  text = text.replace(botToken, (_match, before: string) => {
    const first = !botTyped;
    botTyped = true;
    return first ? `${before}${SLOT}` : before;
  });
  const startsWithOther = text.startsWith("@") && !(userToken && startsWith(text, userToken));
  const mentionBot = botTyped || startsWithOther;
  if (!botTyped && startsWithOther && /^@(\s|$)/.test(text)) text = text.slice(1).trimStart();

  const botKey = mentionBot ? [{ key: "@_user_1", openId: options.bot.openId, name: options.bot.name }] : [];
  const users: LocalUser[] = [];
  if (userToken) {
    text = text.replace(userToken, (_match, before: string, name: string) => {
      const user = options.users.find((candidate) => candidate.name.toLowerCase() === name.toLowerCase());
      if (!user) return _match;
      let index = users.indexOf(user);
      if (index < 0) index = users.push(user) - 1;
      return `${before}@_user_${index + 1 + botKey.length}`;
    });
  }
  text = botTyped ? text.replace(SLOT, "@_user_1") : mentionBot ? `@_user_1 ${text}` : text;
  return {
    text: text.trim(),
    mentionBot,
    users,
    keys: [...botKey, ...users.map((user, i) => ({ key: `@_user_${i + 1 + botKey.length}`, ...user }))],
  };
}

function startsWith(text: string, token: RegExp): boolean {
  const anchored = new RegExp(`^${token.source}`, token.flags.replace("g", ""));
  return anchored.test(text);
}
