/**
 * The queues a claim round asks, starting at `round`'s turn: a round fills its free slots from the
 * first queue that has work, so a fixed order would drain the queues one after another — a backlog
 * in the first holding every other back, and a fleet with the same list working one queue (one
 * cluster master) at a time.
 */
export function queuesInTurn(queues: readonly string[], round: number): readonly string[] {
  if (queues.length < 2) return queues;
  const first = round % queues.length;
  return [...queues.slice(first), ...queues.slice(0, first)];
}
