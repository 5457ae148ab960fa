// Events that come while something is awaited, streamed as they come: a turn's tool calls run at
// once, and their progress events reach the run's stream before the turn's results do. Pure (no
// I/O, no timers): the tool loop, which Temporal's workflow sandbox imports, uses it.
import type { AgentEvent } from "@flotilla/events";

/**
 * Runs `work`, yielding every event it emits, in the order emitted, until it settles; then returns
 * its value or throws its error. An event emitted after that is dropped: the stream has moved on.
 */
export async function* streamWhile<T>(work: (emit: (event: AgentEvent) => void) => Promise<T>): AsyncGenerator<AgentEvent, T, undefined> {
  const queue: AgentEvent[] = [];
  let settled = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const outcome = work((event) => {
    if (settled) return;
    queue.push(event);
    notify();
  });
  const done = () => {
    settled = true;
    notify();
  };
  outcome.then(done, done);
  for (;;) {
    while (queue.length > 0) yield queue.shift()!;
    if (settled) return await outcome;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}
