import type { AskStatus } from "../store/asks.ts";
import type { ElicitationAsk, ElicitResponse } from "./elicitation.ts";
import type { AskAnswer, AskQuestion } from "./schema.ts";

/**
 * What the registry (registry.ts) holds and hands out: an ask waiting for its answer, and how it ended. Its
 * own file, so the mapping to and from the ask rows (rows.ts) and the registry both name it without
 * importing each other.
 */

export type AskOutcome =
  | {
      kind: "answered";
      answers: AskAnswer[];
      surface: string;
      userId: string;
      /** Set for an MCP elicitation (its `answers` are empty): accept with content, decline or cancel. */
      response?: ElicitResponse;
    }
  | { kind: "timeout" }
  /** 拒绝回答: the person asked said they will not answer (only where `declinable`). */
  | { kind: "declined"; surface: string; userId: string }
  | { kind: "cancelled"; reason: string; superseded?: true };

export interface PendingAsk {
  requestId: string;
  sessionId: string;
  runId: string;
  /** The tool call that asked: a resumed turn finds its ask again by it. */
  toolCallId?: string;
  /** The run's sender: the only person who may answer. */
  answererId: string;
  questions: AskQuestion[];
  metadata: Record<string, unknown> | undefined;
  /** The surfaces that could reach the answerer when the question was asked (for the audit). */
  surfaces: string[];
  /** Why an outside agent asks (agents-api): shown on the card above its form. */
  reason?: string;
  /**
   * The second kind of ask: an MCP server's form (its `questions` are empty). Kept in memory only: the MCP
   * request waiting for it dies with the process, so there is nothing to resume after a restart.
   */
  elicitation?: ElicitationAsk;
  createdAt: number;
  expiresAt: number;
  /** How much 延长 has added so far. */
  extendedMs: number;
  /** Who asked can read a 拒绝回答 (an outside agent, agents-api): the card and the page offer it. */
  declinable?: true;
}

/**
 * How a person's answer (or 拒绝回答) went: it settled the ask, or it was refused. `gone`: the ask is not
 * pending in that session (settled first elsewhere, timed out, unknown); `forbidden`: the person is not the
 * ask's `answererId`. The registry decides both, so no surface can forget who may answer.
 */
export type AnswerResult = { ok: true } | { ok: false; reason: "gone" | "forbidden" };

/** An ask by id after the fact: pending, or how it ended. */
export interface AskState {
  ask: PendingAsk;
  status: AskStatus;
  outcome: AskOutcome | undefined;
  /** When it ended, if it did (from its row). */
  settledAt?: number;
}
