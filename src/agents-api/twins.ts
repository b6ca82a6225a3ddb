import type { AskRegistry } from "../asks/registry.ts";
import type { AskLedger } from "./ledger.ts";
import type { AgentTask, TaskBook } from "./task-book.ts";
import type { AgentPrincipal } from "./token.ts";

/**
 * The same questions from the same agent to the same answerer, still open, on the same task (or, without a
 * task, on a question card for the same person): a client whose own timeout cut the first call asks again
 * and must land on the form already shown, not stack a second one (issue 31). An ask whose row is still
 * being written counts as open too: the second call waits for the first and joins it.
 */
export class AskTwins {
  readonly #registry: AskRegistry;
  readonly #book: TaskBook;
  readonly #ledger: AskLedger;
  /** Asks being registered, by twin key: resolved with the ask id once the first call has recorded it. */
  readonly #asking = new Map<string, Promise<string | undefined>>();

  constructor(registry: AskRegistry, book: TaskBook, ledger: AskLedger) {
    this.#registry = registry;
    this.#book = book;
    this.#ledger = ledger;
  }

  static key(
    who: AgentPrincipal,
    existing: AgentTask | undefined,
    to: string,
    answerer: string,
    questions: unknown,
  ) {
    return JSON.stringify([who.agent, existing?.run.id ?? `to:${to}`, answerer, questions]);
  }

  /** The open twin's ask id, if there is one. */
  async find(
    who: AgentPrincipal,
    existing: AgentTask | undefined,
    to: string,
    answerer: string,
    questions: unknown,
  ): Promise<string | undefined> {
    const key = AskTwins.key(who, existing, to, answerer, questions);
    return (
      (await this.#open(who, existing, answerer, to, questions)) ??
      this.#ledger.undeliveredTwin(key) ??
      this.#asking.get(key)
    );
  }

  /** Marks `key` as being asked; call the result with the ask id once recorded (undefined when it failed). */
  asking(key: string): (askId: string | undefined) => void {
    let done!: (askId: string | undefined) => void;
    const recorded = new Promise<string | undefined>((resolve) => {
      done = resolve;
    });
    this.#asking.set(key, recorded);
    return (askId) => {
      if (this.#asking.get(key) === recorded) this.#asking.delete(key);
      done(askId);
    };
  }

  async #open(
    who: AgentPrincipal,
    existing: AgentTask | undefined,
    answerer: string,
    to: string,
    questions: unknown,
  ): Promise<string | undefined> {
    const same = JSON.stringify(questions);
    for (const ask of this.#registry.getPendingForSession(`agent:${who.agent}:${to}`)) {
      const scoped = existing ? ask.runId === existing.run.id : this.#book.get(ask.runId)?.implicit === true;
      if (!scoped || ask.answererId !== answerer || JSON.stringify(ask.questions) !== same) continue;
      // Whose it is last: after a restart the ledger reads the ask's row back.
      if (await this.#ledger.get(who, ask.requestId)) return ask.requestId;
    }
    return undefined;
  }
}
