import type { ElicitationAsk, ElicitField } from "../asks/elicitation.ts";
import { oneLine, truncate } from "../util/text.ts";
import type { AskSubmitValue } from "./actions.ts";
import { type AskContext, askHeading } from "./ask-context.ts";
import { formFields } from "./form-fields.ts";
import { escapeText, safeUrl } from "./markdown.ts";
import type { CardNode, FormNode } from "./model.ts";

/**
 * An MCP server's form (elicitation) on the progress card: the server named in the heading, one field per
 * schema property (string → input, enum → select_static, multi-select → multi_select_static, boolean →
 * 是/否, number → input checked on submit), and 提交 / 拒绝 / 取消, all submit buttons of the one form so the
 * callback carries the act. URL mode: the link and 完成 / 取消. Pure; server text is shown as text.
 */
export function elicitForm(
  ask: { requestId: string; elicitation: ElicitationAsk },
  index: number,
  total: number,
  c: AskContext,
): FormNode {
  const { elicitation: e } = ask;
  const s = c.strings.card;
  const server = escapeText(oneLine(e.server));
  const message = escapeText(truncate(e.message, c.budget.questionChars));
  const url = e.url ? safeUrl(e.url) : undefined;
  const who = e.url !== undefined ? s.elicitUrlHeading(server) : s.elicitHeading(server);
  // Above it, the ask form's own heading: in a group it says whose answer the form waits for.
  const heading = `${askHeading(c, index + 1, total)}\n${who}`;
  const link = url ? `\n\n${s.elicitOpenLink(url)}${linkHost(e, c)}` : "";
  const elements: CardNode[] = [{ tag: "markdown", content: `${heading}\n\n${message}${link}` }];
  e.fields.forEach((field, j) => {
    elements.push({ tag: "markdown", content: fieldLabel(field, c) });
    elements.push(fieldNode(field, formFields.elicit(index, j), c));
  });
  const button = (act: AskSubmitValue["act"], text: string, primary: boolean): CardNode => ({
    tag: "button",
    name: formFields.button(index, act),
    text: { tag: "plain_text", content: text },
    type: primary ? "primary_filled" : "default",
    form_action_type: "submit",
    behaviors: [
      {
        type: "callback",
        value: {
          kind: "feishu_ask",
          act,
          sessionId: c.sessionId,
          requestId: ask.requestId,
          sender: c.senderId,
        },
      },
    ],
  });
  if (e.url !== undefined)
    elements.push(button("submit", s.elicitDone, true), button("cancel", s.elicitCancel, false));
  else
    elements.push(
      button("submit", s.submit, true),
      button("decline", s.elicitDecline, false),
      button("cancel", s.elicitCancel, false),
    );
  return { tag: "form", name: formFields.form(index), elements };
}

/**
 * Where the link really goes, beside it (issue 24 item 12): a look-alike `gооgle.com` shows its punycode
 * `xn--ggle-55da.com` too. Monospace, so `l` and `I` differ; the host was checked in the harness
 * (harness/agents/mcp/elicit-url.ts), and only characters a host can hold are kept here.
 */
function linkHost(e: ElicitationAsk, c: AskContext): string {
  if (!e.urlHost) return "";
  const code = (host: string) => `\`${host.replace(/[\s`<>]/g, "")}\``;
  const { unicode, ascii } = e.urlHost;
  const words = c.strings.card.elicitLinkHost;
  return `　${unicode === ascii ? words(code(ascii)) : words(code(unicode), code(ascii))}`;
}

function fieldLabel(field: ElicitField, c: AskContext): string {
  const title = `**${escapeText(oneLine(field.title))}**${field.required ? c.strings.card.elicitRequired : ""}`;
  if (!field.description) return title;
  return `${title} ${escapeText(truncate(oneLine(field.description), c.budget.descriptionChars))}`;
}

function fieldNode(field: ElicitField, name: string, c: AskContext): CardNode {
  const s = c.strings.card;
  const text = (content: string) => ({ tag: "plain_text" as const, content });
  switch (field.kind) {
    case "text":
    case "number":
      return {
        tag: "input",
        name,
        required: false,
        placeholder: text(field.kind === "number" ? s.elicitNumberPlaceholder : s.elicitTextPlaceholder),
        max_length: 1000,
        width: "fill",
        ...(field.initial && "text" in field.initial ? { default_value: field.initial.text } : {}),
      };
    case "boolean":
      return {
        tag: "select_static",
        name,
        required: false,
        placeholder: text(s.selectPlaceholder),
        width: "fill",
        ...initialIndex(field),
        options: [
          { text: text(s.elicitYes), value: "yes" },
          { text: text(s.elicitNo), value: "no" },
        ],
      };
    case "choice":
    case "multi": {
      const options = field.options.map((option, k) => ({
        text: text(truncate(oneLine(option.label) || `${k + 1}`, c.budget.optionTextChars)),
        value: String(k),
      }));
      return field.kind === "multi"
        ? {
            tag: "multi_select_static",
            name,
            required: false,
            placeholder: text(s.multiSelectPlaceholder),
            width: "fill",
            selected_values: indexes(field).map(String),
            options,
          }
        : {
            tag: "select_static",
            name,
            required: false,
            placeholder: text(s.selectPlaceholder),
            width: "fill",
            ...initialIndex(field),
            options,
          };
    }
  }
}

function indexes(field: ElicitField): number[] {
  return field.initial && "indexes" in field.initial ? field.initial.indexes : [];
}

/** 1-based, as the ask form does it (whether initial_option means value or text is undocumented). */
function initialIndex(field: ElicitField): { initial_index?: number } {
  const first = indexes(field)[0];
  return first === undefined ? {} : { initial_index: first + 1 };
}
