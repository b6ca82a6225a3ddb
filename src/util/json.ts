/**
 * Text that may or may not be JSON (a tool's output, an environment variable, a frame's payload, a message's
 * content): its value, or undefined when it is not JSON. `JSON.parse` never returns undefined, so undefined
 * always means "not JSON"; each caller decides what that means for it (plain text, a refusal, a shape error).
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}
