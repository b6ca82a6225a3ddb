import type { EmulatorClock } from "./types.ts";

/** The emulator's time: a base clock plus an offset that tests move with `advance()`. */
export function createClock(base: () => number = Date.now): EmulatorClock {
  let offset = 0;
  return {
    now: () => base() + offset,
    advance: (ms: number) => {
      offset += ms;
    },
  };
}
