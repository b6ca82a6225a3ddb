/**
 * Types for question-panel.js (plain browser JavaScript, no build step), so Node tests import it typed.
 * The shapes mirror asks/schema.ts; DOM types are left opaque because the project compiles without lib.dom.
 */

export interface PanelOption {
  label: string;
  description: string;
  preview?: string;
}

export interface PanelQuestion {
  question: string;
  header: string;
  options: PanelOption[];
  multiSelect: boolean;
}

export interface QuestionState {
  readonly selected: readonly string[];
  readonly other: string;
}

export interface PanelAnswer {
  question: string;
  selectedLabels: string[];
  customInput: string | null;
}

export declare const MAX_CUSTOM_INPUT_CHARS: number;
export declare const TEXT: Readonly<Record<string, string | ((index: number, total: number) => string)>>;

export declare function emptyState(questions: readonly PanelQuestion[]): QuestionState[];
export declare function selectOption(
  question: PanelQuestion,
  state: QuestionState,
  label: string,
  checked?: boolean,
): QuestionState;
export declare function typeOther(question: PanelQuestion, state: QuestionState, text: string): QuestionState;
export declare function isAnswered(state: QuestionState): boolean;
export declare function canSubmit(
  questions: readonly PanelQuestion[],
  states: readonly QuestionState[],
  flags?: { canAnswer?: boolean; busy?: boolean },
): boolean;
export declare function collectAnswers(
  questions: readonly PanelQuestion[],
  states: readonly QuestionState[],
): PanelAnswer[];
export declare function hasPreview(question: PanelQuestion): boolean;
export declare function previewFor(
  question: PanelQuestion,
  state: QuestionState,
  hoveredLabel?: string | null,
): { label: string | null; text: string | null };
export declare function unfence(preview: string): string;

export interface AskPanel {
  readonly element: unknown;
  readonly requestId: string;
  readonly busy: boolean;
  setHeading(index: number, total: number): void;
  setCanAnswer(value: boolean): void;
  setBusy(value: boolean): void;
  showError(message: string | null): void;
  markStale(message: string): void;
}

export declare function createAskPanel(
  doc: unknown,
  ask: { requestId: string; questions: readonly PanelQuestion[] },
  options?: { canAnswer?: boolean; onSubmit?: (answers: PanelAnswer[]) => void },
): AskPanel;
