import { z } from "zod";
import { ASK_TOOL_NAME, formatIssues } from "../../asks/schema.ts";
import type { ToolDefinition } from "../../domain/types.ts";
import type { ToolContext, ToolHost, ToolImpl } from "../dispatcher.ts";

/**
 * The tools a real model may call besides `ask_user_questions` (which the dispatcher owns). An operator
 * adds one in code:
 *
 *   registry.register(defineTool({
 *     name: "lookup_order", description: "Find an order by its number.",
 *     input: z.object({ orderNo: z.string() }),
 *     async execute({ orderNo }, ctx) { return { status: await orders.status(orderNo) }; },
 *   }));
 *
 * and passes `registry.list()` to the core. `defineTool` checks the model's arguments against `input`, and
 * the model reads what is wrong and can correct its call.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolImpl>();

  register(tool: ToolImpl): this {
    const name = tool.definition.name;
    if (name === ASK_TOOL_NAME) throw new Error(`${ASK_TOOL_NAME} is built in; it cannot be registered`);
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name))
      throw new Error(`Tool name "${name}" must be 1-64 letters, digits, _ or - (the chat API's rule)`);
    if (this.#tools.has(name)) throw new Error(`A tool named "${name}" is already registered`);
    this.#tools.set(name, tool);
    return this;
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  list(): ToolImpl[] {
    return [...this.#tools.values()];
  }
}

export interface ToolSpec<S extends z.ZodType> {
  name: string;
  description: string;
  input: S;
  only?: ToolDefinition["only"];
  /** A string is returned as is; anything else as JSON. A throw becomes `{"error": message}` for the model. */
  execute(input: z.output<S>, ctx: ToolContext, host: ToolHost): Promise<unknown>;
}

export function defineTool<S extends z.ZodType>(spec: ToolSpec<S>): ToolImpl {
  return {
    definition: {
      name: spec.name,
      description: spec.description,
      parameters: z.toJSONSchema(spec.input, { io: "input", unrepresentable: "any" }) as Record<
        string,
        unknown
      >,
      ...(spec.only ? { only: spec.only } : {}),
    },
    async execute(args, ctx, host) {
      let value: unknown = args;
      if (typeof args === "string") {
        try {
          value = JSON.parse(args);
        } catch {
          return JSON.stringify({ error: "Invalid arguments: not valid JSON" });
        }
      }
      const parsed = spec.input.safeParse(value);
      if (!parsed.success)
        return JSON.stringify({ error: `Invalid arguments: ${formatIssues(parsed.error.issues)}` });
      const result = await spec.execute(parsed.data, ctx, host);
      return typeof result === "string" ? result : JSON.stringify(result ?? {});
    },
  };
}

/** A harmless example tool, and a useful one: models do not know the date. */
export function currentTimeTool(now: () => number = Date.now): ToolImpl {
  return defineTool({
    name: "current_time",
    description: "The current date and time (ISO 8601, UTC, and in a given IANA time zone).",
    input: z.strictObject({
      timeZone: z.string().optional().describe("IANA time zone such as Asia/Shanghai (default)"),
    }),
    async execute({ timeZone }) {
      const date = new Date(now());
      const zone = timeZone ?? "Asia/Shanghai";
      let local: string;
      try {
        local = date.toLocaleString("sv-SE", { timeZone: zone, hour12: false });
      } catch {
        return { error: `Unknown time zone: ${zone}` };
      }
      return { iso: date.toISOString(), timeZone: zone, local, summary: `${local} (${zone})` };
    },
  });
}
