/**
 * The text of the button a callback came from, for the log ("Alice 点击「提交」"): the button with that
 * name, else the one whose callback value is the one received. Pure; walks any JSON.
 */
export function buttonLabel(
  card: unknown,
  action: { name?: string | undefined; value?: unknown },
): string | undefined {
  const buttons: Record<string, unknown>[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (typeof node !== "object" || node === null) return;
    const record = node as Record<string, unknown>;
    if (record.tag === "button") buttons.push(record);
    for (const child of Object.values(record)) visit(child);
  };
  visit(card);
  const wanted = action.value === undefined ? undefined : JSON.stringify(action.value);
  const byName = action.name === undefined ? undefined : buttons.find((b) => b.name === action.name);
  const byValue =
    wanted === undefined
      ? undefined
      : buttons.find((b) =>
          Array.isArray(b.behaviors)
            ? b.behaviors.some(
                (behavior: unknown) =>
                  typeof behavior === "object" &&
                  behavior !== null &&
                  JSON.stringify((behavior as { value?: unknown }).value) === wanted,
              )
            : false,
        );
  const text = (byName ?? byValue)?.text as { content?: unknown } | undefined;
  return typeof text?.content === "string" ? text.content : undefined;
}
