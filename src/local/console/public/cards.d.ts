/** Types of the pure parts of cards.js, for tests that import it from Node. */

export interface FormField {
  tag: string;
  name: string;
  value?: string;
  values?: string[];
  required?: boolean;
}

export interface CardAction {
  value?: Record<string, unknown>;
  name?: string;
  formValue?: Record<string, string | string[]>;
}

export const REQUIRED_MISSING: string;
export function escapeHtml(text: unknown): string;
export function markdownToHtml(source: unknown): string;
export function inlineMarkdownToHtml(source: unknown): string;
export function collectFormValue(fields: FormField[]): Record<string, string | string[]>;
export function missingRequired(fields: FormField[]): string[];
export function callbackValue(button: unknown): Record<string, unknown> | undefined;
export function buttonAction(button: unknown, formValue?: Record<string, string | string[]>): CardAction;
export function safeUrl(url: unknown): string | undefined;
export function cardPreview(card: unknown): string;
export function localizeCard(card: unknown, locale: string): unknown;
export function resolveMentions(
  content: unknown,
  mentionName: (openId: string) => string | undefined,
): string;
/** Builds DOM; needs a browser. */
export function renderCard(
  card: unknown,
  options?: {
    onAction?: (action: CardAction) => unknown;
    onNotice?: (message: string) => void;
    openUrl?: (url: string) => void;
    mentionName?: (openId: string) => string | undefined;
  },
): unknown;
export function readFormFields(form: unknown): FormField[];
