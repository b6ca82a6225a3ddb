import { p2pChatId } from "../emulator/ids.ts";

/** The people of local mode: three users, each with a private chat with the bot, and one group of all three. */
export interface LocalUser {
  openId: string;
  name: string;
}

export const LOCAL_USERS: LocalUser[] = [
  { openId: "ou_local_alice", name: "Alice" },
  { openId: "ou_local_bob", name: "Bob" },
  { openId: "ou_local_carol", name: "Carol" },
];

export const LOCAL_GROUP_CHAT_ID = "oc_local_group";
export const LOCAL_GROUP_NAME = "本地测试群";
export const LOCAL_GROUP_NAME_EN = "Local test group";
/** A topic group (话题群, issue 19): every message starts a topic, replies go into topics. */
export const LOCAL_TOPIC_GROUP_CHAT_ID = "oc_local_topics";
export const LOCAL_TOPIC_GROUP_NAME = "本地话题群";
export const LOCAL_TOPIC_GROUP_NAME_EN = "Local topic group";

export interface ConsoleChat {
  chatId: string;
  type: "p2p" | "group";
  name: string;
  /** The user of a private chat: only they may type in it. */
  ownerId?: string;
  memberIds: string[];
  /** `topic`: a topic group, shown as a list of topics (the emulator is told at start, local/index.ts). */
  mode?: "topic";
}

/**
 * The chats the console shows: every user's private chat with the bot (the emulator's `oc_p2p_<openId>`),
 * then the groups, named in the bot's language (a Lark tenant's groups have English names).
 */
export function localChats(locale = "zh_cn"): ConsoleChat[] {
  const english = locale === "en_us";
  return [
    ...LOCAL_USERS.map(
      (user): ConsoleChat => ({
        chatId: p2pChatId(user.openId),
        type: "p2p",
        name: user.name,
        ownerId: user.openId,
        memberIds: [user.openId],
      }),
    ),
    {
      chatId: LOCAL_GROUP_CHAT_ID,
      type: "group",
      name: english ? LOCAL_GROUP_NAME_EN : LOCAL_GROUP_NAME,
      memberIds: LOCAL_USERS.map((user) => user.openId),
    },
    {
      chatId: LOCAL_TOPIC_GROUP_CHAT_ID,
      type: "group",
      name: english ? LOCAL_TOPIC_GROUP_NAME_EN : LOCAL_TOPIC_GROUP_NAME,
      memberIds: LOCAL_USERS.map((user) => user.openId),
      mode: "topic",
    },
  ];
}

export const localUser = (openId: string): LocalUser | undefined =>
  LOCAL_USERS.find((user) => user.openId === openId);
