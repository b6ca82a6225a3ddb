/**
 * Renders a string table to plain data so two tables can be compared byte for byte: each string as is, each
 * function called with a fixed set of sample arguments chosen to reach every branch in today's functions
 * (0 and 1 and 2 steps or questions, seconds under and over a minute, an empty task name).
 */
const SAMPLE_ARGS: readonly (readonly unknown[])[] = [
  [0, 0, 0],
  [1, 1, 1],
  [2, 2, 2],
  [75, 75, 75],
  ["", "", ""],
  ["‹a›", "‹b›", "‹c›"],
  [1, 3, 5],
  ["‹a›", 2, 3],
];

export type Rendered = { [key: string]: string | string[] | Rendered };

export function renderStrings(table: object): Rendered {
  const out: Rendered = {};
  for (const [key, value] of Object.entries(table)) {
    if (typeof value === "string") out[key] = value;
    else if (typeof value === "function") out[key] = SAMPLE_ARGS.map((args) => String(value(...args)));
    else if (value !== null && typeof value === "object") out[key] = renderStrings(value);
    else throw new Error(`${key}: a string table holds strings, functions and tables, not ${typeof value}`);
  }
  return out;
}
