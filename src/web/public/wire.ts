/**
 * What the session page reads from the server: `/auth/me`, `/api/sessions/…` and the `/ws` frames. The
 * server's types own these shapes (ws/protocol.ts ServerFrame and SessionSnapshot, domain/types.ts RunView);
 * they cannot be imported here because those modules pull in Node code. test/browser-wire.test.ts checks at
 * typecheck time that the server's types still fit these, so the two cannot drift apart silently.
 */
import type { PanelQuestion } from "./question-panel.ts";

export interface PageStep {
  status: string;
  title?: string;
  tool?: string;
  summary?: string;
}

export interface PageRun {
  id: string;
  senderId: string;
  input: string;
  status: string;
  steps: PageStep[];
  text?: string;
  error?: string;
  startedAt: number;
  /** What the run's model requests cost, where its agent reported it (domain/usage.ts). */
  usage?: { inputTokens?: number; outputTokens?: number; cachedTokens?: number; model?: string };
}

export interface PageSnapshot {
  active: boolean;
  run: PageRun | null;
  queued: { text: string }[];
  queuedCount: number;
}

export interface PageAsk {
  requestId: string;
  questions: PanelQuestion[];
  expiresAt: number;
  canExtend: boolean;
  declinable: boolean;
}

export type PageFrame =
  | { type: "ask_user_questions"; sessionId: string; data: PageAsk }
  | { type: "ask_user_questions_cancelled"; sessionId: string; data: { requestId: string; reason: string } }
  | { type: "ask_user_questions_accepted"; sessionId: string; data: { requestId: string } }
  | { type: "session_snapshot"; sessionId: string; data: PageSnapshot }
  | { type: "subscribed"; sessionId: string; data: { canAnswer: boolean; canCancel: boolean } }
  | { type: "cancelled"; sessionId: string; data: { runId: string } }
  | { type: "pong"; sessionId: string; data: Record<string, never> }
  | {
      type: "error";
      sessionId: string | null;
      data: { code: string; message: string; requestId?: string; action?: "cancel" | "extend" };
    };
