import { z } from "zod";
import { createLarkClient, type LarkMessengerOptions, toFeishuError } from "../lark-messenger.ts";
import { FeishuApiError, type MessageTarget } from "../messenger.ts";

/**
 * The CardKit calls the card transport makes (feishu-platform §3.5), over the SDK's client or a fake. Each
 * failure is a FeishuApiError with Feishu's code, like the IM messenger's.
 */
export interface CardKitApi {
  /** `POST /cardkit/v1/cards`: a card entity from a 2.0 card. */
  create(card: object): Promise<{ cardId: string }>;
  /** The entity as a message (`{"type":"card","data":{"card_id"}}`), once; a reply, or a new message. */
  send(
    where: { replyTo: string; inThread?: boolean } | { target: MessageTarget },
    cardId: string,
    uuid: string | undefined,
  ): Promise<{ messageId: string }>;
  /** `PUT /cards/:card_id`: the whole card. */
  update(cardId: string, card: object, sequence: number): Promise<void>;
  /** `PATCH /cards/:card_id/settings`. */
  settings(cardId: string, config: Record<string, unknown>, sequence: number): Promise<void>;
  /** `PUT /cards/:card_id/elements/:element_id/content`: the element's full text. */
  content(cardId: string, elementId: string, text: string, sequence: number): Promise<void>;
}

/** CardKit codes the transport acts on. */
export const CARDKIT_ERRORS = {
  callbackInProgress: 200810,
  streamingTimedOut: 200850,
  streamingClosed: 300309,
  sequence: 300317,
  cardIdInvalid: 11310,
  invalidCard: 230099,
} as const;

const envelope = z.object({ code: z.number(), msg: z.string().optional() }).passthrough();
const cardData = z.object({ data: z.object({ card_id: z.string() }) });
const messageData = z.object({ data: z.object({ message_id: z.string() }) });

export function createLarkCardKit(options: LarkMessengerOptions): CardKitApi {
  const { client } = createLarkClient(options);
  async function call<T>(
    method: string,
    request: { method: string; url: string; data?: unknown; params?: Record<string, string> },
    schema: z.ZodType<T>,
  ): Promise<T> {
    let response: unknown;
    try {
      response = await client.request(request);
    } catch (error) {
      throw toFeishuError(method, error);
    }
    const head = envelope.safeParse(response);
    if (!head.success) throw new FeishuApiError({ method, message: "unexpected response shape" });
    if (head.data.code !== 0)
      throw new FeishuApiError({
        method,
        message: head.data.msg ?? "error",
        feishuCode: head.data.code,
        httpStatus: 200,
      });
    const parsed = schema.safeParse(response);
    if (!parsed.success)
      throw new FeishuApiError({ method, message: "unexpected response shape", httpStatus: 200 });
    return parsed.data;
  }
  const cards = "/open-apis/cardkit/v1/cards";
  const id = encodeURIComponent;
  return {
    async create(card) {
      const res = await call(
        "cardkit.card.create",
        { method: "POST", url: cards, data: { type: "card_json", data: JSON.stringify(card) } },
        cardData,
      );
      return { cardId: res.data.card_id };
    },
    async send(where, cardId, uuid) {
      const body = {
        msg_type: "interactive",
        content: JSON.stringify({ type: "card", data: { card_id: cardId } }),
        ...(uuid ? { uuid } : {}),
      };
      if ("replyTo" in where) {
        const res = await call(
          "im.message.reply",
          {
            method: "POST",
            url: `/open-apis/im/v1/messages/${id(where.replyTo)}/reply`,
            data: where.inThread ? { ...body, reply_in_thread: true } : body,
          },
          messageData,
        );
        return { messageId: res.data.message_id };
      }
      const byChat = "chatId" in where.target;
      const res = await call(
        "im.message.create",
        {
          method: "POST",
          url: "/open-apis/im/v1/messages",
          params: { receive_id_type: byChat ? "chat_id" : "open_id" },
          data: {
            receive_id: "chatId" in where.target ? where.target.chatId : where.target.openId,
            ...body,
          },
        },
        messageData,
      );
      return { messageId: res.data.message_id };
    },
    async update(cardId, card, sequence) {
      await call(
        "cardkit.card.update",
        {
          method: "PUT",
          url: `${cards}/${id(cardId)}`,
          data: { card: { type: "card_json", data: JSON.stringify(card) }, sequence },
        },
        envelope,
      );
    },
    async settings(cardId, config, sequence) {
      await call(
        "cardkit.card.settings",
        {
          method: "PATCH",
          url: `${cards}/${id(cardId)}/settings`,
          data: { settings: JSON.stringify({ config }), sequence },
        },
        envelope,
      );
    },
    async content(cardId, elementId, text, sequence) {
      await call(
        "cardkit.cardElement.content",
        {
          method: "PUT",
          url: `${cards}/${id(cardId)}/elements/${id(elementId)}/content`,
          data: { content: text, sequence },
        },
        envelope,
      );
    },
  };
}
