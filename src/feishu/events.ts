import { z } from "zod";

/**
 * Inbound Feishu payloads, parsed once at the edge (STYLE 1). Both transports hand handlers the same
 * flattened shape the SDK's EventDispatcher produces for schema 2.0: `{...header, ...event}`
 * (feishu-platform §2.2), so the webhook flattens raw bodies the same way.
 */

const openIdRef = z.object({ open_id: z.string().optional() }).passthrough();
/**
 * A platform id (om_…, omt_…, oc_…, ou_…): Feishu prints them as a prefix, `_` and hex. They name sessions
 * and workspace directories (domain/session-id.ts), so anything but letters, digits and `_` is refused here,
 * rather than reaching a path or making two ids collide (a chat id with `-topic-` in it would otherwise name
 * another chat's topic).
 */
const platformId = z.string().regex(/^[A-Za-z0-9_]{1,200}$/, "must be a platform id (letters, digits and _)");
/** The sender: their open id names a private chat's session and workspace, so it is a platform id too. */
const senderIdRef = z.object({ open_id: platformId.optional() }).passthrough();
/** An id that may be absent or, as some payloads send it, an empty string: both mean "none". */
const optionalId = z
  .union([z.literal(""), platformId])
  .optional()
  .transform((value) => (value === undefined || value === "" ? undefined : value));

const messageEventSchema = z.object({
  event_id: z.string().optional(),
  sender: z.object({ sender_id: senderIdRef.optional(), sender_type: z.string().optional() }).passthrough(),
  message: z
    .object({
      message_id: platformId,
      // Topics and threads (feishu-platform §5.1): ids of the thread's root, the message replied to, the thread.
      root_id: optionalId,
      parent_id: optionalId,
      thread_id: optionalId,
      chat_id: platformId,
      chat_type: z.string(),
      message_type: z.string(),
      content: z.string().default(""),
      create_time: z.string().optional(),
      mentions: z
        .array(
          z.object({ key: z.string(), id: openIdRef.optional(), name: z.string().optional() }).passthrough(),
        )
        .optional(),
    })
    .passthrough(),
});

export interface InboundMessage {
  eventId: string | undefined;
  messageId: string;
  chatId: string;
  chatType: "p2p" | "group";
  messageType: string;
  /** Text with mention placeholders as sent (`@_user_1 hello`); undefined for non-text messages. */
  rawText: string | undefined;
  mentions: { key: string; openId: string | undefined; name: string | undefined }[];
  senderOpenId: string;
  senderType: string;
  /** Set when the message is inside a topic (a topic group's, or a thread under a message in a normal group). */
  threadId: string | undefined;
  /** The first message of the reply tree (for a topic: its root message); undefined for a message that is none. */
  rootId: string | undefined;
  /** The message this one replies to (a quote reply, or the root inside a topic). */
  parentId: string | undefined;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export function parseMessageEvent(data: unknown): Parsed<InboundMessage> {
  const parsed = messageEventSchema.safeParse(data);
  if (!parsed.success) return { ok: false, error: issueText(parsed.error) };
  const { message, sender } = parsed.data;
  const senderOpenId = sender.sender_id?.open_id;
  if (!senderOpenId) return { ok: false, error: "sender.sender_id.open_id is missing" };
  if (message.chat_type !== "p2p" && message.chat_type !== "group") {
    return { ok: false, error: `unsupported chat_type ${message.chat_type}` };
  }
  let rawText: string | undefined;
  if (message.message_type === "text") {
    const content = safeJson(message.content);
    const text =
      typeof content === "object" && content !== null ? (content as { text?: unknown }).text : undefined;
    if (typeof text !== "string") return { ok: false, error: "text message content has no text" };
    rawText = text;
  }
  return {
    ok: true,
    value: {
      eventId: parsed.data.event_id,
      messageId: message.message_id,
      chatId: message.chat_id,
      chatType: message.chat_type,
      messageType: message.message_type,
      rawText,
      mentions: (message.mentions ?? []).map((m) => ({ key: m.key, openId: m.id?.open_id, name: m.name })),
      senderOpenId,
      senderType: sender.sender_type ?? "user",
      threadId: message.thread_id,
      rootId: message.root_id,
      parentId: message.parent_id,
    },
  };
}

/**
 * Removes mention placeholders (`@_user_1`) from the text; `@_all` too. With `lines`, line breaks stay (a
 * reply to a card answers one question per line, card-replies.ts); runs of other spaces become one either way.
 */
export function stripMentions(
  rawText: string,
  mentions: InboundMessage["mentions"],
  options: { lines?: boolean } = {},
): string {
  let text = rawText;
  for (const mention of mentions) text = text.split(mention.key).join(" ");
  text = text.replace(/@_all\b/g, " ");
  if (!options.lines) return text.replace(/\s+/g, " ").trim();
  return text
    .split(/\r?\n/)
    .map((line) => line.replace(/\s+/g, " ").trim())
    .filter((line) => line !== "")
    .join("\n");
}

const cardActionSchema = z.object({
  operator: z.object({ open_id: z.string().min(1) }).passthrough(),
  token: z.string().optional(),
  action: z
    .object({
      value: z.unknown().optional(),
      tag: z.string().optional(),
      name: z.string().optional(),
      form_value: z.unknown().optional(),
    })
    .passthrough(),
  context: z
    .object({ open_message_id: z.string().optional(), open_chat_id: z.string().optional() })
    .passthrough()
    .optional(),
  open_message_id: z.string().optional(),
  // No operator language is read: card.action.trigger carries none (feishu-platform §2.1). Toasts carry every
  // language in `i18n` and the client picks its own.
});

export interface InboundCardAction {
  operatorOpenId: string;
  /** The clicked component's `behaviors[].value`: still untrusted, parsed by `parseActionValue`. */
  value: unknown;
  formValue: unknown;
  name: string | undefined;
  messageId: string | undefined;
  chatId: string | undefined;
  /** The delayed-update token (`c-…`), valid 30 min for 2 uses. */
  updateToken: string | undefined;
}

export function parseCardAction(data: unknown): Parsed<InboundCardAction> {
  const parsed = cardActionSchema.safeParse(data);
  if (!parsed.success) return { ok: false, error: issueText(parsed.error) };
  const d = parsed.data;
  return {
    ok: true,
    value: {
      operatorOpenId: d.operator.open_id,
      value: d.action.value,
      formValue: d.action.form_value,
      name: d.action.name,
      messageId: d.context?.open_message_id ?? d.open_message_id,
      chatId: d.context?.open_chat_id,
      updateToken: d.token,
    },
  };
}

const envelopeSchema = z.object({
  schema: z.literal("2.0"),
  header: z
    .object({ event_type: z.string(), event_id: z.string().optional(), token: z.string().optional() })
    .passthrough(),
  event: z.record(z.string(), z.unknown()),
});

/** A raw schema-2.0 body flattened the way the SDK hands it to handlers; the verification token kept apart. */
export function flattenEnvelope(
  body: unknown,
): Parsed<{ eventType: string; data: Record<string, unknown>; verificationToken: string | undefined }> {
  const parsed = envelopeSchema.safeParse(body);
  if (!parsed.success) return { ok: false, error: issueText(parsed.error) };
  const { header, event } = parsed.data;
  return {
    ok: true,
    value: { eventType: header.event_type, data: { ...header, ...event }, verificationToken: header.token },
  };
}

function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.map(String).join(".") || "payload"}: ${issue.message}` : "invalid payload";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
