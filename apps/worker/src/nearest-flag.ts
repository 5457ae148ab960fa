// The flag a mistyped one most likely meant, as the flotilla CLI suggests (commander's rule): the
// closest by edit distance, counting a swap of two neighbouring letters as one edit, when it is
// close enough to be a typo (at least 60 % alike), or a flag it begins (3 letters or more).

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The known flag `given` most likely meant (both without their dashes), or undefined when none is close. */
export function nearestFlag(given: string, known: readonly string[]): string | undefined {
  let best: { flag: string; distance: number } | undefined;
  for (const flag of known) {
    const distance = editDistance(given, flag);
    const alike = 1 - distance / Math.max(given.length, flag.length);
    if (alike < 0.6 && !(given.length >= 3 && flag.startsWith(given))) continue;
    if (!best || distance < best.distance) best = { flag, distance };
  }
  return best?.flag;
}
