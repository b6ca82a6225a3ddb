import { parseJson } from "../../util/json.ts";
import { CARD_LIMITS, checkCard } from "./card-checker/index.ts";
import { CODES, cardContentError, fail } from "./errors.ts";

/**
 * Content checks for send, reply and PATCH (feishu-platform §1.3, §3.1–3.3). `content` is the JSON string
 * from the request body; its size is measured the way it travels (as a JSON string value, UTF-8), which
 * is what `cardSize` measures for a card.
 */

export const MSG_TYPES = [
  "text",
  "post",
  "image",
  "file",
  "audio",
  "media",
  "sticker",
  "interactive",
  "share_chat",
  "share_user",
] as const;

const TEXT_MAX_BYTES = 150 * 1024;

export function contentBytes(content: string): number {
  return Buffer.byteLength(JSON.stringify(content), "utf8");
}

/** Throws the platform's error for content that may not be sent as `msgType`. */
/** 编辑消息: "一条消息最多可编辑 20 次" (the page names no code for the 21st: 230001 is assumed). */
export const EDITS_PER_MESSAGE = 20;

export function checkContent(msgType: string, content: string): void {
  if (msgType === "interactive") {
    checkCardContent(content);
    return;
  }
  const limit = msgType === "text" ? TEXT_MAX_BYTES : CARD_LIMITS.maxBytes;
  const size = contentBytes(content);
  if (size > limit) throw fail(CODES.contentTooLong, `content is ${size} bytes; the limit is ${limit}`);
  const parsed = parseJson(content);
  if (parsed === undefined)
    throw fail(CODES.messageInvalid, "invalid message content: content is not valid JSON");
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw fail(CODES.messageInvalid, "invalid message content: content must be a JSON object string");
  if (msgType === "text" && typeof (parsed as { text?: unknown }).text !== "string")
    throw fail(CODES.messageInvalid, 'invalid message content: text content needs a "text" string');
}

/**
 * 30 KB (230025), then JSON (230099 / 200621), then — for updates — `update_multi` (§3.2), then the
 * emulator's own card checker (`card-checker/`, written from the docs, §1.5): 230099 naming the rule.
 */
export function checkCardContent(content: string, options: { update?: boolean } = {}): void {
  const size = contentBytes(content);
  if (size > CARD_LIMITS.maxBytes)
    throw fail(
      CODES.contentTooLong,
      `[size] card content is ${size} bytes; the limit is ${CARD_LIMITS.maxBytes}`,
    );
  let card: unknown;
  try {
    card = JSON.parse(content);
  } catch {
    throw cardContentError("card json parse error: content is not valid JSON");
  }
  if (!isRecord(card)) throw cardContentError("card json parse error: content is not a JSON object");
  if (card.type === "template" || card.type === "card")
    throw cardContentError(`cards of type "${String(card.type)}" are not supported by the emulator`);
  // "update_multi must be declared before and after the update" (§3.2): an update cannot lean on the default.
  if (options.update && !(isRecord(card.config) && card.config.update_multi === true))
    throw cardContentError("[update-multi] config.update_multi: must be true to update a card");
  const verdict = checkCard(card);
  if (!verdict.ok) throw cardContentError(verdict.summary, verdict.violations[0]?.subCode);
}

/**
 * What `GET /im/v1/messages/:id` shows for a card without `card_msg_content_type=user_card_content`:
 * the platform degrades 2.0 cards to a stub. The exact stub text is the emulator's approximation.
 */
export function degradedCardContent(content: string): string {
  let title: string | null = null;
  try {
    const card = JSON.parse(content) as { header?: { title?: { content?: unknown } } };
    const candidate = card.header?.title?.content;
    if (typeof candidate === "string") title = candidate;
  } catch {
    // Stored content always parsed once; keep the stub title empty if it somehow does not.
  }
  return JSON.stringify({
    title,
    elements: [[{ tag: "text", text: "请升级至最新版本客户端，以查看内容" }]],
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
