import { h } from "./dom.ts";
import type { ConsoleMessage } from "./types.ts";
import { words } from "./words.ts";

/**
 * The input at the bottom of a chat: Enter sends (not while an IME is composing), Shift+Enter breaks the
 * line, "@机器人" inserts the bot mention, examples fill the input, and a reply target can be set.
 */

/** How the console's language writes the bot's mention (`@机器人`, `@bot`: compose.ts reads both). */
const botMention = () => words().mentionButton;

/** Inserts `insert` at the caret, with a space before it when needed; returns the new value and caret. */
export function insertAtCaret(
  value: string,
  start: number,
  end: number,
  insert: string,
): { value: string; caret: number } {
  const before = value.slice(0, start);
  const pad = before !== "" && !/\s$/.test(before) ? " " : "";
  const next = `${before}${pad}${insert}${value.slice(end)}`;
  return { value: next, caret: before.length + pad.length + insert.length };
}

export interface ComposerElements {
  input: HTMLTextAreaElement;
  send: HTMLButtonElement;
  mention: HTMLButtonElement;
  hint: HTMLElement;
  replyTarget: HTMLElement;
}

export interface ComposerHandlers {
  /** Sends the text (as a reply to `replyTo` when set); true once it left, so the input is cleared. */
  onSend: (text: string, replyTo: string | undefined) => Promise<boolean>;
  preview: (message: ConsoleMessage) => string;
}

export function createComposer(elements: ComposerElements, handlers: ComposerHandlers) {
  const { input, send, mention, hint, replyTarget } = elements;
  let replyTo: ConsoleMessage | undefined;
  let busy = false;

  const autosize = () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 160)}px`;
  };
  const insert = (text: string) => {
    const next = insertAtCaret(
      input.value,
      input.selectionStart ?? input.value.length,
      input.selectionEnd ?? input.value.length,
      text,
    );
    input.value = next.value;
    input.setSelectionRange(next.caret, next.caret);
    input.focus();
    autosize();
  };
  const submit = async () => {
    if (busy || input.disabled || input.value.trim() === "") return;
    busy = true;
    send.disabled = true;
    try {
      const sent = await handlers.onSend(input.value, replyTo?.messageId);
      if (sent) {
        input.value = "";
        setReplyTo(undefined);
        autosize();
      }
    } finally {
      busy = false;
      send.disabled = input.disabled;
      input.focus();
    }
  };
  const setReplyTo = (message: ConsoleMessage | undefined): void => {
    replyTo = message;
    replyTarget.hidden = !message;
    if (!message) return replyTarget.replaceChildren();
    replyTarget.replaceChildren(
      h("span", {
        class: "reply-label",
        text: words().replyTo(message.sender.name, handlers.preview(message)),
      }),
      h("button", {
        type: "button",
        class: "reply-cancel",
        "aria-label": words().cancelReply,
        text: "×",
        onclick: () => setReplyTo(undefined),
      }),
    );
    input.focus();
  };

  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    void submit();
  });
  input.addEventListener("input", autosize);
  send.addEventListener("click", () => void submit());
  mention.addEventListener("click", () => insert(`${botMention()} `));

  return {
    setReplyTo,
    /** Shows how to talk in this chat; `canWrite` false makes the input read-only with the reason. */
    configure({
      group,
      canWrite,
      ownerName,
      botName,
      onSwitchToOwner,
    }: {
      group: boolean;
      canWrite: boolean;
      ownerName: string;
      botName: string;
      onSwitchToOwner: () => void;
    }): void {
      input.disabled = !canWrite;
      send.disabled = !canWrite;
      mention.hidden = !group || !canWrite;
      if (!canWrite) setReplyTo(undefined);
      const w = words();
      const mentionText = botMention();
      input.placeholder = !canWrite
        ? w.readOnlyPlaceholder(ownerName)
        : group
          ? w.groupPlaceholder(mentionText)
          : w.privatePlaceholder(botName);
      hint.replaceChildren(
        ...(canWrite
          ? [
              group
                ? h(
                    "span",
                    { class: "hint-text" },
                    w.groupHintBefore,
                    h("b", { text: mentionText }),
                    w.groupHintAfter,
                  )
                : h("span", { class: "hint-text", text: w.privateHint }),
              ...w.examples.map((example) =>
                h("button", {
                  type: "button",
                  class: "example",
                  "data-testid": "example",
                  title: example.title,
                  text: example.text,
                  onclick: () => {
                    input.value = group ? `${mentionText} ${example.text}` : example.text;
                    input.focus();
                    autosize();
                  },
                }),
              ),
            ]
          : [
              h("span", { class: "hint-text", text: w.guestHint(ownerName) }),
              h("button", {
                type: "button",
                class: "example",
                "data-testid": "switch-to-owner",
                text: w.switchTo(ownerName),
                onclick: onSwitchToOwner,
              }),
            ]),
      );
    },
  };
}
