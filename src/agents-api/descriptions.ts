import { ASK_TOOL_DESCRIPTION } from "../asks/schema.ts";
import { CLIENT_TIMEOUTS } from "./connect-recipes.ts";
import { DEFAULT_WAIT_S } from "./schemas.ts";

/** What the models read about each tool: when to use it, what comes back, what never to do with it. */
export const TOOL_DESCRIPTIONS = {
  server: [
    "Reach a person in Feishu while you work: start_task opens a progress card for them, report_progress",
    "shows your steps, ask_user_questions puts a multiple-choice form on the card and returns their answer",
    "(call get_answers while it is pending), finish_task ends the card. Ask only what you cannot decide",
    "yourself, say why in reason, and never ask for secrets.",
  ].join(" "),
  start_task: [
    "Open a live progress card in Feishu for a person (to = their open_id, ou_…, in your private chat with",
    "them) or a group (to = chat id, oc_…). The card shows your name, the title, and the steps you report.",
    "Use it once per piece of work a person should follow; returns task_id for the other tools.",
    "You may only reach the people and chats your token allows.",
  ].join(" "),
  report_progress: [
    "Add or update a step on your task's card: status running (default), done or failed, with an optional",
    "short detail. Reporting the same step text again updates that step. Updates are coalesced, so report",
    "freely; the card shows the latest state.",
  ].join(" "),
  ask_user_questions: [
    "Ask the person 1-4 multiple-choice questions as a form on a Feishu card and get their answers.",
    "Give task_id to ask on your task's card, or to for a new question card. In a group (oc_…) set answerer",
    "to the open_id of the one person whose answer counts. Always say in reason why you ask; it is shown.",
    "Never ask for passwords, tokens, keys or other secrets: this is not a channel for them.",
    `The call waits up to wait_s seconds (default ${DEFAULT_WAIT_S}). Keep wait_s under your client's own`,
    `limit on one tool call, or the client gives up before you see the ask_id: ${CLIENT_TIMEOUTS.join("; ")}.`,
    "If the result's status is pending, the person has not answered yet: call get_answers with the ask_id",
    "to keep waiting; the answer is kept for you whenever it comes. If your call was cut off before you saw",
    "an ask_id, ask the same questions again on the same task: you join the open question, no second form.",
    "status timeout or cancelled means no answer will come. answers has one entry per question:",
    "{question, selectedLabels, customInput}.",
    "",
    ASK_TOOL_DESCRIPTION,
  ].join("\n"),
  get_answers: [
    `Wait up to wait_s seconds (default ${DEFAULT_WAIT_S}) for the answers to an earlier ask_user_questions call and`,
    "return them: the same result shape. Call it again while the status is pending.",
  ].join(" "),
  cancel_question: "Withdraw a question you no longer need answered: its form leaves the card.",
  finish_task: [
    "End your task: status completed (text is the result, markdown), failed (text says what went wrong) or",
    "cancelled. Open questions on its card are withdrawn. Call it when the work is done.",
  ].join(" "),
} as const;
