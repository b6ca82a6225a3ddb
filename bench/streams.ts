/**
 * Update streams for the one-card benchmark, and how stale the card was. A stream is a series of bursts at
 * the nominal rate separated by short pauses, so every burst has a final state the card must catch up with.
 */

export interface Plan {
  /** When each change happens, ms from the start; change i (1-based) makes state i. */
  offsets: number[];
  /** The states that end a burst. */
  finals: Set<number>;
}

export function planBursts(options: { rate: number; seconds: number; random: () => number }): Plan {
  const { rate, seconds, random } = options;
  const endMs = seconds * 1000;
  const spacingMs = 1000 / rate;
  const offsets: number[] = [];
  const finals = new Set<number>();
  let burstAt = 0;
  while (burstAt < endMs) {
    const burstMs = 2000 + random() * 3000;
    for (let t = burstAt; t < Math.min(burstAt + burstMs, endMs); t += spacingMs) offsets.push(t);
    finals.add(offsets.length);
    burstAt += burstMs + 1200 + random() * 800;
  }
  return { offsets, finals };
}

export interface StreamResult {
  changes: number;
  /** For each burst's final state: ms from the change until a PATCH showing it (or a later state) was acknowledged and not overwritten by an older one; Infinity when that never happened. */
  finalStaleness: number[];
  /** The worst staleness of any change; a lower bound when some change never landed (counted until the end). */
  worst: number;
  worstIsLowerBound: boolean;
  backlog: number;
}

/**
 * Change i "lands" at the first applied PATCH from which the card keeps showing state ≥ i: a naive sender's
 * older PATCH arriving late would take the card back, and then it has not landed yet.
 */
export function staleness(input: {
  changedAt: readonly number[];
  finals: ReadonlySet<number>;
  applied: readonly number[];
  ackedAt: ReadonlyMap<number, number>;
  observedUntil: number;
  backlog: number;
}): StreamResult {
  const { changedAt, applied, ackedAt, observedUntil } = input;
  const floor: number[] = new Array(applied.length);
  let min = Number.POSITIVE_INFINITY;
  for (let k = applied.length - 1; k >= 0; k -= 1) {
    min = Math.min(min, applied[k] ?? 0);
    floor[k] = min;
  }
  const landedAt = (state: number): number | undefined => {
    let lo = 0;
    let hi = floor.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((floor[mid] ?? 0) >= state) hi = mid;
      else lo = mid + 1;
    }
    return lo < applied.length ? ackedAt.get(applied[lo] ?? 0) : undefined;
  };
  const finalStaleness: number[] = [];
  let worst = 0;
  let worstIsLowerBound = false;
  changedAt.forEach((at, index) => {
    const state = index + 1;
    const landed = landedAt(state);
    const waited = (landed ?? observedUntil) - at;
    worst = Math.max(worst, waited);
    if (landed === undefined) worstIsLowerBound = true;
    if (input.finals.has(state))
      finalStaleness.push(landed === undefined ? Number.POSITIVE_INFINITY : waited);
  });
  return { changes: changedAt.length, finalStaleness, worst, worstIsLowerBound, backlog: input.backlog };
}
