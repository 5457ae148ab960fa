import type { Priority } from "@flotilla/core";

const STRICT: readonly Priority[] = ["high", "normal", "low"];
const LOW_FIRST: readonly Priority[] = ["low", "normal", "high"];
const NORMAL_FIRST: readonly Priority[] = ["normal", "high", "low"];

/**
 * The lane order of claim round `round`. Strict priority, except that in every `fairnessEvery`
 * rounds low picks first once and normal picks first once, so under a flood of high work neither
 * waits forever. `fairnessEvery` 0: strict priority in every round.
 */
export function laneOrder(round: number, fairnessEvery: number): readonly Priority[] {
  if (fairnessEvery === 0) return STRICT;
  const at = round % fairnessEvery;
  if (at === fairnessEvery - 1) return LOW_FIRST;
  if (at === Math.floor(fairnessEvery / 2) - 1) return NORMAL_FIRST;
  return STRICT;
}
