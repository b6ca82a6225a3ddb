/** What the English catalogue needs that the Chinese does not: month names and plurals. */

export const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** English needs a plural where Chinese does not: "1 question", "2 questions". */
export function plural(count: number, one: string, many = `${one}s`): string {
  return count === 1 ? one : many;
}
