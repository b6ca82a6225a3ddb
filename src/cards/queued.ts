import type { Locale, Strings } from "../strings/index.ts";
import { truncate } from "../util/text.ts";
import type { QueueValue } from "./actions.ts";
import { maskContacts } from "./contacts.ts";
import { localizeCard } from "./i18n.ts";
import { escapeText } from "./markdown.ts";
import { type Card, type CardNode, tagColorFor } from "./model.ts";
import type { Redaction } from "./redaction.ts";
import { CARD_LIMITS, cardSize } from "./rules.ts";

/** The card that answers a message which arrived while a task was running (DESIGN §6 queue). Pure. */
export interface QueuedView {
  sessionId: string;
  queueId: string;
  senderId: string;
  text: string;
  /** 1-based place in the session's queue. */
  position: number;
  state: "queued" | "started" | "withdrawn";
  /**
   * When the tenant's audit refused the card (230028): `masked` quotes the message with its e-mail addresses
   * and phone numbers masked, `withheld` does not quote it at all (cards/redaction.ts has the same rungs).
   */
  redaction?: Redaction;
}

/** In every locale (cards/i18n.ts) unless `options.strings` asks for one; it is always far under budget. */
export function buildQueuedCard(
  view: QueuedView,
  options: { strings?: Strings; locales?: readonly Locale[] } = {},
): Card {
  if (options.strings) return buildInOneLanguage(view, options.strings);
  return localizeCard(
    (strings) => buildInOneLanguage(view, strings),
    (card) => cardSize(card) <= CARD_LIMITS.targetBytes,
    options.locales,
  );
}

function buildInOneLanguage(view: QueuedView, s: Strings): Card {
  // The user typed this: shown as text, so it cannot add links, headings or a fake notice to a group card.
  const said = view.redaction === "masked" ? maskContacts(view.text) : view.text;
  const quote = escapeText(truncate(said.trim(), 300)).replace(/\n/g, "\n> ");
  const status =
    view.state === "queued"
      ? s.card.queuedBody(view.position)
      : view.state === "started"
        ? s.card.queuedStarted
        : s.card.queuedWithdrawn;
  const elements: CardNode[] = [
    { tag: "markdown", content: view.redaction === "withheld" ? status : `> ${quote}\n\n${status}` },
  ];
  if (view.state === "queued") {
    const value = (act: QueueValue["act"]): QueueValue => ({
      kind: "queue",
      act,
      sessionId: view.sessionId,
      queueId: view.queueId,
      sender: view.senderId,
    });
    const buttons: CardNode[] = [];
    // 插队 only means something when another message waits ahead of this one.
    if (view.position > 1) {
      buttons.push({
        tag: "button",
        text: { tag: "plain_text", content: s.card.promote },
        type: "primary",
        behaviors: [{ type: "callback", value: value("promote") }],
      });
    }
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.card.unqueue },
      type: "default",
      behaviors: [{ type: "callback", value: value("unqueue") }],
    });
    elements.push({
      tag: "column_set",
      flex_mode: "flow",
      horizontal_spacing: "8px",
      columns: buttons.map((button) => ({ tag: "column", width: "auto", elements: [button] })),
    });
  }
  const template = view.state === "started" ? "blue" : "grey";
  return {
    schema: "2.0",
    config: {
      update_multi: true,
      summary: { content: `${s.card.queuedTitle} · ${s.card.queuedStatus[view.state]}` },
    },
    header: {
      title: { tag: "plain_text", content: s.card.queuedTitle },
      template,
      text_tag_list: [
        {
          tag: "text_tag",
          text: { tag: "plain_text", content: s.card.queuedStatus[view.state] },
          color: tagColorFor(template),
        },
      ],
    },
    body: { elements },
  };
}
